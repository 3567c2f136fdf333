import Foundation
import Logging
import PushPipeCore

/// Events posted by a backend over HTTP: the route is part of the source's configuration.
struct HTTPEventSource: QueuedEventSource, LongRunningStage {
    static let summary = "Accepts events as JSON on an authenticated HTTP route."

    struct Configuration: StageConfiguration {
        var knownValues: [String: [String]]
        var path: String
        var method: String
        var auth: JSON
        var userField: String
        var userPrefix: String
        var requireUser: Bool
        var idField: String?
        var wait: Bool
        @Seconds var lease: Duration
        var limits: JSON

        static let schema = Schema([
            .required(
                "path",
                .string,
                "The route, e.g. `/api/notifications/events`. `GET <path>/:id`, with the same authentication, answers the status of an event this "
                    + "caller posted (the 202's `Location`)."
            ),
            SchemaKey("method", .oneOf(["POST", "PUT"]), default: "POST", "HTTP method."),
            SchemaKey(
                "auth",
                RouteAuthConfiguration.backendValueType,
                default: ["type": "none"],
                "`{type: token, token}` for the backend's shared secret."
            ),
            SchemaKey("user_field", .string, default: "user", "Body field naming the recipient (string or number)."),
            SchemaKey(
                "user_prefix",
                .string,
                default: "",
                "Put before the recipient, so that recipients of another kind (`group:` for a group's broadcast channel) never share a name with "
                    + "users."
            ),
            SchemaKey("require_user", .boolean, default: true, "Reject events without a recipient; false broadcasts them."),
            SchemaKey("id_field", .string, "Body field used as the event id (must be unique); generated when absent."),
            SchemaKey(
                "wait",
                .boolean,
                default: false,
                "Answer 200 with the delivery report instead of 202. Without it, the 202 comes once the event is in the store: a daemon stopped "
                    + "before processing it sends it after its restart."
            ),
            SchemaKey(
                "known_values",
                .map(.list(.string)),
                default: [:],
                "Expected values per field; others are accepted with a warning (lists grow)."
            ),
            SchemaKey(
                "lease",
                .duration,
                default: 15,
                in: 1...Double.infinity,
                "How long an accepted event stays with this daemon without renewal before another daemon on the database takes it over (a "
                    + "shorter one could not be renewed in time)."
            ),
            RouteLimits.schemaKey(defaults: RouteLimits.backendDefaults),
        ])
    }

    let configuration: Configuration
    let route: RouteDefinition
    let statusRoute: RouteDefinition
    let intake: QueuedEventIntake

    init(configuration: Configuration, context: StageBuildContext) throws {
        guard configuration.path.hasPrefix("/") else {
            throw ConfigurationValueError(keyPath: "path", "'\(configuration.path)' is not a route path", expected: "a path starting with '/'")
        }
        self.configuration = configuration
        let limits = try RouteLimits.parse(configuration.limits, defaults: RouteLimits.backendDefaults)
        let source = context.key
        let intake = QueuedEventIntake(lease: configuration.lease)
        self.intake = intake
        route = RouteDefinition(
            method: configuration.method,
            path: configuration.path,
            authentication: RouteAuthConfiguration.backend(configuration.auth),
            limits: limits,
            contract: Self.acceptContract(configuration)
        ) { request, routeContext in
            try await Self.accept(request, routeContext, configuration, source: source, intake: intake)
        }
        statusRoute = RouteDefinition(
            method: "GET",
            path: Self.statusPath(configuration.path, id: ":id"),
            authentication: RouteAuthConfiguration.backend(configuration.auth),
            limits: limits,
            contract: Self.statusContract
        ) { request, routeContext in
            try await Self.status(request, routeContext)
        }
    }

    var routes: [RouteDefinition] { [route, statusRoute] }

    /// An event: a JSON object naming its recipient; answered 202 with where its status is
    /// (or, with `wait`, 200 and its report).
    static func acceptContract(_ configuration: Configuration) -> RouteContract {
        var properties: [String: JSON] = [configuration.userField: ["type": ["string", "integer"]]]
        if let idField = configuration.idField { properties[idField] = ["type": ["string", "integer"]] }
        let body = RouteContract.object(properties, required: configuration.requireUser ? [configuration.userField] : [])
        if configuration.wait {
            return RouteContract(
                summary: "Sends an event through the pipeline and answers its delivery report.",
                body: body,
                responses: [200: RouteContract.object(["status": RouteContract.string], required: ["status"])],
                errors: idempotencyErrors
            )
        }
        return RouteContract(
            summary: "Accepts an event once it is stored; an Idempotency-Key header makes a retry safe.",
            body: body,
            responses: [
                202: RouteContract.object(
                    [
                        "status": RouteContract.string, "id": RouteContract.string,
                        "event_id": RouteContract.string,
                    ],
                    required: ["status", "id", "event_id"]
                )
            ],
            responseHeaders: ["location": "The event's status: GET it with the same credentials."],
            errors: idempotencyErrors
        )
    }

    /// The route reads an `Idempotency-Key` header, and only it answers these.
    static let idempotencyErrors = [409: "The same Idempotency-Key is still being stored."]

    /// An event's record (`EventRecord.statusJSON`).
    static let statusContract = RouteContract(
        summary: "What became of an event this caller posted.",
        responses: [
            200: RouteContract.object(
                [
                    "id": RouteContract.string, "state": ["type": "string", "enum": .array(EventRecord.State.allCases.map { .string($0.rawValue) })],
                    "recipients": ["type": "array", "items": RouteContract.object],
                ],
                required: ["id", "state"]
            )
        ]
    )

    /// Where an accepted event's status is: `GET <path>/<id>`, with the route's authentication.
    static func statusPath(_ path: String, id: String) -> String {
        (path.hasSuffix("/") ? String(path.dropLast()) : path) + "/" + id
    }

    static func location(_ configuration: Configuration, id: String) -> String {
        // An id the daemon made (hex) is as it stands: Foundation's encoding builds its
        // character set and scans through CoreFoundation, on every accepted event.
        let plain = id.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        return statusPath(configuration.path, id: plain ? id : id.addingPercentEncoding(withAllowedCharacters: segmentAllowed) ?? id)
    }

    /// What a path segment holds unencoded: a `/` in an id is encoded.
    static let segmentAllowed = CharacterSet.urlPathAllowed.subtracting(["/"])

    /// What became of an event this caller posted: any other event, whoever posted it, is not
    /// found, so ids cannot be probed.
    static func status(_ request: RouteRequest, _ context: RouteContext) async throws -> RouteResponse {
        let id = request.parameters["id"] ?? ""
        let records = try await context.eventRecords.eventStatus(eventID: id, pipeline: context.pipeline)
        guard let record = records.first, record.caller == request.principal else {
            throw RouteError.notFound("no event \(id) posted with these credentials", field: "id")
        }
        return RouteResponse(record.statusJSON)
    }
    /// The HTTP server's loops, where the route's handler runs: an idle worker takes the event,
    /// and answers a waiting caller, without waking a thread of Swift's pool.
    var preferredExecutor: (any TaskExecutor)? { EventLoopGroupTaskExecutor.singleton }

    /// New events arrive through the route. Meanwhile: take over what an earlier run, a daemon
    /// that died, or this one let go of, accepted and did not finish.
    func run(into sink: any EventSink, context: StageContext) async throws {
        await intake.claimWhileRunning(into: sink, context: context, announcing: "accepted events whose daemon stopped before finishing them")
    }

    /// Renews the leases of what this daemon holds, until the pipeline drained.
    func run(context: StageContext) async throws {
        guard context.mode == .live else { return await untilCancelled() }
        await intake.renewWhileRunning(context: context)
    }

    static func accept(
        _ request: RouteRequest,
        _ context: RouteContext,
        _ configuration: Configuration,
        source: String,
        intake: QueuedEventIntake
    ) async throws -> RouteResponse {
        let leases = intake.leases
        guard let body = request.body else { throw RouteError.badRequest("the event must be a JSON object", field: "body") }
        var user: String?
        switch body[configuration.userField] {
        case .string(let value) where !value.isEmpty && value.count <= 128: user = configuration.userPrefix + value
        case .int(let value): user = configuration.userPrefix + String(value)
        case nil, .null?:
            if configuration.requireUser { throw RouteError.badRequest("missing field '\(configuration.userField)'", field: configuration.userField) }
        case let other?:
            throw RouteError.unprocessable(
                "'\(configuration.userField)' must be a string or a number, found \(other.typeName)",
                field: configuration.userField
            )
        }
        var id = Event.makeID()
        if let idField = configuration.idField, let value = body[idField] {
            guard let text = value.textValue, !text.isEmpty, text.count <= 128 else {
                throw RouteError.badRequest("'\(idField)' must be a short string", field: idField)
            }
            id = text
        }
        for (field, known) in configuration.knownValues {
            if let value = body[field]?.textValue, !known.contains(value) {
                context.logger.warning("event \(id): \(field) '\(value)' is not one of \(known.joined(separator: ", ")); accepted")
            }
        }
        let idempotencyKey = try IdempotentRequest.key(
            of: request,
            pipeline: context.pipeline,
            route: "\(configuration.method) \(configuration.path)"
        )
        // This request's hold on its key: a failure releases this one, never one taken over since.
        // Only a request with a key has one to hold.
        let holder = idempotencyKey == nil ? "" : RandomIdentifier.uuid()
        if let idempotencyKey {
            if var earlier = try await IdempotentRequest.claim(idempotencyKey, holder: holder, body: body, context: context) {
                if let earlierID = earlier.body["id"]?.stringValue { earlier.headers["location"] = location(configuration, id: earlierID) }
                return earlier
            }
        }
        if configuration.wait {
            // The caller learns the outcome: nothing to keep if the daemon stops before.
            var event = Event(id: id, pipeline: context.pipeline, user: user, body: body)
            event.source = source
            event.caller = request.principal
            event.traceParent = request.traceParent
            let response: RouteResponse
            do {
                response = RouteResponse(try JSON(encoding: try await context.sink.submitAndWait(event)))
            } catch {
                if let idempotencyKey { try? await context.idempotencyKeys.releaseIdempotencyKey(idempotencyKey, holder: holder) }
                throw error
            }
            if let idempotencyKey {
                try await context.idempotencyKeys.recordIdempotentAnswer(
                    IdempotentAnswer(key: idempotencyKey, status: response.status, body: response.body)
                )
            }
            return response
        }
        let accepted = RouteResponse(
            status: 202,
            ["status": "accepted", "event_id": .string(id), "id": .string(id)],
            headers: ["location": location(configuration, id: id)]
        )
        var queued = QueuedEvent(
            pipeline: context.pipeline,
            source: source,
            eventID: id,
            user: user,
            time: Date().timeIntervalSince1970,
            body: body,
            lease: configuration.lease
        )
        queued.caller = request.principal
        queued.traceParent = request.traceParent
        queued.answer = idempotencyKey.map { IdempotentAnswer(key: $0, status: accepted.status, body: accepted.body) }
        // Held before it is stored: a renewal between the two renews nothing, one after renews it.
        leases.hold(queued.key)
        do {
            try await context.store.enqueue(queued)
        } catch {
            leases.forget(queued.key)
            if let idempotencyKey { try? await context.idempotencyKeys.releaseIdempotencyKey(idempotencyKey, holder: holder) }
            throw error
        }
        var event = queued.event
        event.onComplete = intake.completion(of: queued, store: context.queuedEvents, logger: context.logger)
        do {
            try await context.sink.submit(event)
        } catch {
            // Not accepted after all (the pipeline is stopping; a full one, at SIGTERM, answers
            // its waiting requests here): taken back, and the caller sends it again. Its key goes
            // too, though it holds the 202 stored with the event: given again, it would answer
            // for an event that is gone.
            leases.forget(queued.key)
            try? await context.queuedEvents.dequeue(source: source, key: queued.key)
            if let idempotencyKey { try? await context.idempotencyKeys.withdrawIdempotencyKey(idempotencyKey) }
            throw error
        }
        return accepted
    }
}
