import Foundation
import Logging

/// Runs one event through a pipeline's filters, renderer and transport, and applies the
/// outcomes: retries with backoff, dead-token pruning, history, watermark commits.
/// The daemon, `pushpipe dry-run` and `pushpipe test` all use it, so they cannot disagree.
public struct EventProcessor: Sendable {
    public let definition: PipelineDefinition
    public let store: any Store
    public let logger: Logger
    public let mode: RunMode
    public let output: OutputSink
    public let telemetry: PipelineTelemetry
    /// Called with every prepared request (pipeline tests collect them).
    public var onRequest: (@Sendable (OutgoingRequest) -> Void)?
    private let reportedConfigErrors = RepeatedMessages(window: nil)
    private let repeatedFailures = RepeatedMessages(window: .seconds(10))
    /// Each stage's context, made once: they are the same for every event.
    private let filterContexts: [StageContext]
    private let rendererContext: StageContext
    private let transportContext: StageContext

    public init(definition: PipelineDefinition, store: any Store, logger: Logger, mode: RunMode, output: OutputSink = .standardOutput,
                telemetry: Telemetry = .unobserved) {
        self.definition = definition
        self.store = store
        self.logger = logger
        self.mode = mode
        self.output = output
        self.telemetry = PipelineTelemetry(telemetry: telemetry, definition: definition)
        let context = StageContext(pipeline: definition.name, stage: "pipeline", store: store, logger: logger, mode: mode, telemetry: telemetry,
                                   output: output)
        filterContexts = definition.filters.map { context.forStage($0.id) }
        rendererContext = context.forStage(definition.renderer.id)
        transportContext = context.forStage(definition.transport.id)
    }

    public func process(_ incoming: Event) async -> EventReport {
        let (report, final) = await run(incoming)
        // The event as the last filter passed it: filters may have chained their own
        // completion (the dedupe filter releases what it holds in flight).
        if let onComplete = final.onComplete { await onComplete(report) }
        return report
    }

    private func run(_ incoming: Event) async -> (EventReport, Event) {
        var event = incoming
        let logger = self.logger
        let telemetry = self.telemetry
        func failed(_ reason: String, stage: String) -> (EventReport, Event) {
            logger.error("event \(event.id) failed: \(reason)", metadata: Self.metadata(event))
            telemetry.failed(event, stage: stage, reason: reason)
            return (EventReport(eventID: event.id, pipeline: definition.name, user: event.user, status: .failed, reason: reason), event)
        }
        for (filter, filterContext) in zip(definition.filters, filterContexts) {
            do {
                switch try await filter.stage.apply(to: event, context: filterContext) {
                case .pass(let passed):
                    event = passed
                    telemetry.passed(event, stage: filter.id, type: filter.type)
                case .drop(let reason, let code):
                    telemetry.dropped(event, stage: filter.id, type: filter.type, reason: reason, code: code)
                    logger.debug("event filtered by \(filter.id) (\(filter.type)): \(reason)", metadata: Self.metadata(event))
                    return (EventReport(eventID: event.id, pipeline: definition.name, user: event.user, status: .filtered,
                                        reason: "\(filter.type): \(reason)"), event)
                }
            } catch {
                return failed("\(filter.id) (\(filter.type)): \(error)", stage: filter.id)
            }
        }
        var tally = DeliveryTally()
        do {
            if event.user == nil {
                // An event for every user: one page of users at a time, so memory and tasks
                // stay bounded however many tokens are registered.
                var after: String?
                while true {
                    let users = try await store.users(pipeline: definition.name, after: after, limit: Self.usersPerPage)
                    guard let first = users.first, let last = users.last else { break }
                    // Stopped (the drain timeout) with users left: not delivered, so a source
                    // keeps the event (a reply file stays) and it goes out again at the next start.
                    guard !Task.isCancelled else {
                        return failed("stopped before every user was reached (\(tally.total) deliveries made)", stage: definition.renderer.id)
                    }
                    var context = rendererContext
                    context.broadcastUsers = first...last
                    try await renderAndDeliver(event, context: context, tally: &tally, logger: logger)
                    after = last
                    if users.count < Self.usersPerPage { break }
                }
            } else {
                try await renderAndDeliver(event, context: rendererContext, tally: &tally, logger: logger)
            }
        } catch let error as RenderFailure {
            return failed("renderer (\(definition.renderer.type)): \(error.underlying)", stage: definition.renderer.id)
        } catch {
            return failed("recipients: \(error)", stage: definition.renderer.id)
        }
        guard tally.total > 0 else {
            telemetry.noRecipients(event, stage: definition.renderer.id)
            return (EventReport(eventID: event.id, pipeline: definition.name, user: event.user, status: .noRecipients,
                                reason: "no registered token for \(event.user.map { "user \($0)" } ?? "any user")"), event)
        }
        let status = tally.status
        // A broadcast's watermarks move once every page is delivered (an event for one user
        // wrote them with its only batch).
        if mode == .live, event.user == nil, status == .delivered {
            do {
                try await store.setState(event.commitOnDelivery, pipeline: definition.name)
            } catch {
                logger.error("could not record the outcome: \(error)", metadata: Self.metadata(event))
            }
        }
        logger.debug("event \(status.rawValue): \(tally.delivered) of \(tally.total) deliveries accepted", metadata: Self.metadata(event))
        return (EventReport(eventID: event.id, pipeline: definition.name, user: event.user, status: status,
                            reason: tally.unresolvedReason, deliveries: tally.reports,
                            omittedDeliveries: tally.total > tally.reports.count ? tally.total - tally.reports.count : nil), event)
    }

    /// A log line's context, built only when the line is written: making a logger with
    /// metadata per event and per delivery cost an allocation each on the hot path.
    static func metadata(_ event: Event, token: DeviceToken? = nil, stage: String? = nil) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["event": .string(event.id)]
        if let token { metadata["token"] = .string(token.masked) }
        if let stage { metadata["stage"] = .string(stage) }
        return metadata
    }

    /// Users a broadcast renders at once: a page's notifications are all that is in memory.
    static var usersPerPage: Int { 1000 }

    struct RenderFailure: Error {
        var underlying: any Error
    }

    /// Renders the event for the context's recipients, delivers at most `delivery.fanout` at
    /// once, and records the outcomes and history of this batch.
    private func renderAndDeliver(_ event: Event, context: StageContext, tally: inout DeliveryTally, logger: Logger) async throws {
        let notifications: [RenderedNotification]
        do {
            notifications = try await definition.renderer.stage.render(event, context: context)
        } catch {
            throw RenderFailure(underlying: error)
        }
        guard !notifications.isEmpty else { return }
        telemetry.rendered(event, notifications, stage: definition.renderer.id)
        let deliveries = await deliverAll(notifications, event: event, logger: logger)
        tally.add(deliveries)
        guard mode == .live else { return }
        // Watermarks move only when everything that could be delivered was.
        let state = event.user != nil && tally.status == .delivered ? event.commitOnDelivery : []
        await record(event, deliveries: deliveries, notifications: notifications, state: state)
    }

    private func deliverAll(_ notifications: [RenderedNotification], event: Event, logger: Logger) async -> [DeliveryReport] {
        if notifications.count == 1 { return [await deliver(notifications[0], event: event, logger: logger)] }
        let fanout = definition.delivery.fanout
        return await withTaskGroup(of: (Int, DeliveryReport).self) { group in
            var ordered = [DeliveryReport?](repeating: nil, count: notifications.count)
            for (index, notification) in notifications.enumerated() {
                if index >= fanout, let (done, report) = await group.next() { ordered[done] = report }
                group.addTask { (index, await self.deliver(notification, event: event, logger: logger)) }
            }
            for await (index, report) in group { ordered[index] = report }
            return ordered.compactMap { $0 }
        }
    }

    /// One batch's delivery rows and history, in one transaction; watermarks are written
    /// separately once the whole event is known to be delivered.
    private func record(_ event: Event, deliveries: [DeliveryReport], notifications: [RenderedNotification], state: [StateWrite]) async {
        let now = Date().timeIntervalSince1970
        var history: [HistoryEntry] = []
        var historyUsers: Set<String> = []
        for (notification, delivery) in zip(notifications, deliveries) where delivery.outcome == "delivered" {
            guard historyUsers.insert(notification.token.user).inserted else { continue }
            history.append(HistoryEntry(pipeline: definition.name, user: notification.token.user, eventID: event.id, createdAt: now,
                                        record: notification.historyRecord ?? notification.payload,
                                        serializedRecord: notification.historyRecord == nil ? notification.payloadBytes : nil))
        }
        let records = zip(notifications, deliveries).map { notification, delivery in
            DeliveryRecord(pipeline: definition.name, eventID: event.id, user: notification.token.user, tokenKind: notification.token.kind,
                           token: notification.token.value, outcome: delivery.outcome, reason: delivery.reason,
                           providerID: delivery.providerID, attempts: delivery.attempts, createdAt: now)
        }
        do {
            try await store.recordOutcome(deliveries: records, history: history, state: state, pipeline: definition.name)
        } catch {
            logger.error("could not record the outcome: \(error)", metadata: Self.metadata(event))
        }
    }

    private func deliver(_ notification: RenderedNotification, event: Event, logger: Logger) async -> DeliveryReport {
        let token = notification.token
        func context() -> Logger.Metadata { Self.metadata(event, token: token, stage: definition.transport.id) }
        let transport = definition.transport.stage
        var attempts = 0
        var outcome: TransportOutcome
        var metricOutcome: String?
        do {
            let request = try transport.prepare(notification, context: transportContext)
            onRequest?(request)
            telemetry.request(event, request)
            if mode == .dryRun {
                output.print("[\(definition.name)] would send:\n\(request.printable)\n")
                telemetry.delivery(event, notification, outcome: "dry_run", reason: nil, attempts: 0)
                return report(notification, .delivered(providerID: "dry-run"), attempts: 0)
            }
            repeat {
                attempts += 1
                outcome = await transport.send(request, context: transportContext)
                guard case .retryAfter(let hint, let reason) = outcome, attempts < definition.delivery.attempts, !Task.isCancelled else { break }
                let delay = definition.delivery.delay(afterAttempt: attempts, hint: hint)
                telemetry.retry()
                if let suppressed = repeatedFailures.admit("retry: \(reason)") {
                    logger.warning("delivery to \(token.masked) will be retried in \(String(format: "%.2f", delay))s: \(reason)\(repeatedFailures.summary(suppressed))", metadata: context())
                }
                // Cancelled (the drain timeout): no further attempt; the outcome stays a retry.
                do { try await Task.sleep(for: .seconds(delay)) } catch { break }
            } while true
        } catch {
            // The transport refused the notification before sending (not an APNs token, too large).
            outcome = .configError(reason: "\(error)")
            metricOutcome = "refused"
        }
        telemetry.delivery(event, notification, outcome: metricOutcome ?? outcome.metricName, reason: outcome.reason, attempts: attempts)
        await apply(outcome, to: notification, event: event, attempts: attempts, logger: logger)
        return report(notification, outcome, attempts: attempts)
    }

    private func apply(_ outcome: TransportOutcome, to notification: RenderedNotification, event: Event, attempts: Int, logger: Logger) async {
        let token = notification.token
        func context() -> Logger.Metadata { Self.metadata(event, token: token, stage: definition.transport.id) }
        switch outcome {
        case .delivered:
            break
        case .retryAfter(_, let reason):
            if let suppressed = repeatedFailures.admit("failed: \(reason)") {
                logger.error("delivery to \(token.masked) failed after \(attempts) attempts: \(reason)\(repeatedFailures.summary(suppressed))", metadata: context())
            }
        case .dropToken(let reason, let since):
            do {
                let removed = try await store.removeToken(pipeline: definition.name, kind: token.kind, token: token.value, unlessUpdatedAfter: since)
                if removed {
                    telemetry.tokenPruned()
                    logger.notice("removed dead \(token.kind) token \(token.masked) of user \(token.user): \(reason)", metadata: context())
                } else {
                    logger.notice("kept \(token.kind) token \(token.masked): re-registered after the provider declared it dead (\(reason))", metadata: context())
                }
            } catch {
                logger.error("could not remove dead token \(token.masked): \(error)", metadata: context())
            }
        case .configError(let reason):
            if reportedConfigErrors.admit(reason) != nil {
                logger.critical("configuration error in pipeline \(definition.name), not retried: \(reason)", metadata: context())
            }
        }
    }

    private func report(_ notification: RenderedNotification, _ outcome: TransportOutcome, attempts: Int) -> DeliveryReport {
        var providerID: String?
        if case .delivered(let id) = outcome { providerID = id }
        return DeliveryReport(user: notification.token.user, tokenKind: notification.token.kind, token: notification.token.masked,
                              outcome: outcome.name, reason: outcome.reason, providerID: providerID, attempts: attempts,
                              payload: notification.payload)
    }
}
