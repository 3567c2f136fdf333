import Foundation
import Logging
import PushPipe

/// Events posted by a backend over HTTP: the route is part of the source's configuration.
struct HTTPEventSource: Source {
    static let summary = "Accepts events as JSON on an authenticated HTTP route."

    struct Configuration: StageConfiguration {
        var knownValues: [String: [String]]
        var path: String
        var method: String
        var auth: JSON
        var userField: String
        var requireUser: Bool
        var idField: String?
        var wait: Bool
        var lease: Double

        static let schema = Schema([
            .required("path", .string, "The route, e.g. `/api/notifications/events`."),
            SchemaKey("method", .oneOf(["POST", "PUT"]), default: "POST", "HTTP method."),
            SchemaKey("auth", RouteAuthConfiguration.backendValueType, default: ["type": "none"], "`{type: token, token}` for the backend's shared secret."),
            SchemaKey("user_field", .string, default: "user", "Body field naming the recipient (string or number)."),
            SchemaKey("require_user", .boolean, default: true, "Reject events without a recipient; false broadcasts them."),
            SchemaKey("id_field", .string, "Body field used as the event id (must be unique); generated when absent."),
            SchemaKey("wait", .boolean, default: false, "Answer 200 with the delivery report instead of 202. Without it, the 202 comes once the event is in the store: a daemon stopped before processing it sends it after its restart."),
            SchemaKey("known_values", .map(.list(.string)), default: [:],
                      "Expected values per field; others are accepted with a warning (lists grow)."),
            SchemaKey("lease", .duration, default: 15,
                      "How long an accepted event stays with this daemon without renewal before another daemon on the database takes it over."),
        ])
    }

    let configuration: Configuration
    let route: RouteDefinition

    init(configuration: Configuration, context: StageBuildContext) throws {
        guard configuration.path.hasPrefix("/") else {
            throw ConfigurationValueError(keyPath: "path", "'\(configuration.path)' is not a route path", expected: "a path starting with '/'")
        }
        guard configuration.lease >= 1 else {
            throw ConfigurationValueError(keyPath: "lease", "a lease under a second cannot be renewed in time", expected: "1s or more")
        }
        self.configuration = configuration
        let source = context.stage
        route = RouteDefinition(method: configuration.method, path: configuration.path,
                                authentication: RouteAuthConfiguration.backend(configuration.auth)) { request, routeContext in
            try await Self.accept(request, routeContext, configuration, source: source)
        }
    }

    var routes: [RouteDefinition] { [route] }
    /// The HTTP server's loops, where the route's handler runs: an idle worker takes the event,
    /// and answers a waiting caller, without waking a thread of Swift's pool.
    var preferredExecutor: (any TaskExecutor)? { EventLoopGroupTaskExecutor.singleton }

    /// New events arrive through the route. Meanwhile: renew the leases of the events in
    /// flight here, and send what an earlier run, or a daemon that died, accepted and did not finish.
    func run(into sink: any EventSink, context: StageContext) async throws {
        let lease = configuration.lease
        let renewal = Duration.milliseconds(Int64(lease * 1000 / 3))
        while !Task.isCancelled {
            do {
                try await context.store.renewLeases(pipeline: context.pipeline, source: context.stage, lease: lease)
                let left = try await context.store.claimQueuedEvents(pipeline: context.pipeline, source: context.stage, lease: lease)
                if !left.isEmpty {
                    context.logger.notice("sending \(left.count) accepted events whose daemon stopped before finishing them")
                    context.count(.eventsRecovered, by: left.count)
                }
                for queued in left {
                    var event = queued.event
                    event.onComplete = Self.dequeueWhenDone(store: context.store, pipeline: context.pipeline, eventID: queued.eventID,
                                                            logger: context.logger)
                    try await sink.submit(event)
                }
            } catch is CancellationError {
                return
            } catch let error as HTTPError where error.status == 503 {
                return // the pipeline is stopping
            } catch {
                context.logger.error("queued events: \(error)")
            }
            do { try await Task.sleep(for: renewal) } catch { return }
        }
    }

    /// Removes the event from the store once processed, whatever the outcome (it is recorded).
    /// Not when the processing was cancelled (drain timeout): the next start sends it again.
    static func dequeueWhenDone(store: any Store, pipeline: String, eventID: String, logger: Logger) -> @Sendable (EventReport) async -> Void {
        { _ in
            guard !Task.isCancelled else { return }
            do {
                try await store.dequeue(pipeline: pipeline, eventID: eventID)
                logger.debug("event \(eventID) processed; removed from the queue")
            } catch {
                logger.error("event \(eventID) processed but still queued (it will be sent again after a restart): \(error)")
            }
        }
    }

    static func accept(_ request: RouteRequest, _ context: RouteContext, _ configuration: Configuration, source: String) async throws -> RouteResponse {
        guard let body = request.body else { throw HTTPError.badRequest("the event must be a JSON object", field: "body") }
        var user: String?
        switch body[configuration.userField] {
        case .string(let value) where !value.isEmpty && value.count <= 128: user = value
        case .int(let value): user = String(value)
        case nil, .null?:
            if configuration.requireUser { throw HTTPError.badRequest("missing field '\(configuration.userField)'", field: configuration.userField) }
        case let other?:
            throw HTTPError.unprocessable("'\(configuration.userField)' must be a string or a number, found \(other.typeName)",
                                          field: configuration.userField)
        }
        var id = Event.makeID()
        if let idField = configuration.idField, let value = body[idField] {
            guard let text = value.textValue, !text.isEmpty, text.count <= 128 else {
                throw HTTPError.badRequest("'\(idField)' must be a short string", field: idField)
            }
            id = text
        }
        for (field, known) in configuration.knownValues {
            if let value = body[field]?.textValue, !known.contains(value) {
                context.logger.warning("event \(id): \(field) '\(value)' is not one of \(known.joined(separator: ", ")); accepted")
            }
        }
        if configuration.wait {
            // The caller learns the outcome: nothing to keep if the daemon stops before.
            var event = Event(id: id, pipeline: context.pipeline, user: user, body: body)
            event.source = source
            let report = try await context.sink.submitAndWait(event)
            return RouteResponse(try JSON(encoding: report))
        }
        let now = Date().timeIntervalSince1970
        let queued = QueuedEvent(pipeline: context.pipeline, source: source, eventID: id, user: user, time: now, body: body,
                                 leaseUntil: now + configuration.lease)
        try await context.store.enqueue(queued)
        var event = queued.event
        event.onComplete = dequeueWhenDone(store: context.store, pipeline: context.pipeline, eventID: id, logger: context.logger)
        do {
            try await context.sink.submit(event)
        } catch {
            // Not accepted after all (the pipeline is stopping): the caller sends it again.
            try? await context.store.dequeue(pipeline: context.pipeline, eventID: id)
            throw error
        }
        return RouteResponse(status: 202, ["status": "accepted", "event_id": .string(id)])
    }
}
