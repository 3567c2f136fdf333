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
    /// Called with every prepared request (pipeline tests collect them).
    public var onRequest: (@Sendable (OutgoingRequest) -> Void)?
    private let reportedConfigErrors = RepeatedMessages(window: nil)
    private let repeatedFailures = RepeatedMessages(window: .seconds(10))
    /// Each stage's context, made once: they are the same for every event.
    private let filterContexts: [StageContext]
    private let rendererContext: StageContext
    private let transportContext: StageContext

    public init(definition: PipelineDefinition, store: any Store, logger: Logger, mode: RunMode, output: OutputSink = .standardOutput) {
        self.definition = definition
        self.store = store
        self.logger = logger
        self.mode = mode
        self.output = output
        let context = StageContext(pipeline: definition.name, stage: "pipeline", store: store, logger: logger, mode: mode)
        filterContexts = definition.filters.map { context.forStage($0.id) }
        rendererContext = context.forStage(definition.renderer.id)
        transportContext = context.forStage(definition.transport.id)
    }

    public func process(_ incoming: Event) async -> EventReport {
        let report = await run(incoming)
        if let onComplete = incoming.onComplete { await onComplete(report) }
        return report
    }

    private func run(_ incoming: Event) async -> EventReport {
        var event = incoming
        let logger = self.logger
        func failed(_ reason: String) -> EventReport {
            logger.error("event \(event.id) failed: \(reason)")
            return EventReport(eventID: event.id, pipeline: definition.name, user: event.user, status: .failed, reason: reason)
        }
        for (filter, filterContext) in zip(definition.filters, filterContexts) {
            do {
                switch try await filter.stage.apply(to: event, context: filterContext) {
                case .pass(let passed): event = passed
                case .drop(let reason):
                    logger.debug("event filtered by \(filter.id) (\(filter.type)): \(reason)")
                    return EventReport(eventID: event.id, pipeline: definition.name, user: event.user, status: .filtered,
                                       reason: "\(filter.type): \(reason)")
                }
            } catch {
                return failed("\(filter.id) (\(filter.type)): \(error)")
            }
        }
        let notifications: [RenderedNotification]
        do {
            notifications = try await definition.renderer.stage.render(event, context: rendererContext)
        } catch {
            return failed("renderer (\(definition.renderer.type)): \(error)")
        }
        guard !notifications.isEmpty else {
            return EventReport(eventID: event.id, pipeline: definition.name, user: event.user, status: .noRecipients,
                               reason: "no registered token for \(event.user.map { "user \($0)" } ?? "any user")")
        }
        let rendered = event
        let eventLogger = logger
        let deliveries: [DeliveryReport]
        if notifications.count == 1 {
            deliveries = [await deliver(notifications[0], event: rendered, logger: eventLogger)]
        } else {
            deliveries = await withTaskGroup(of: (Int, DeliveryReport).self) { group in
                for (index, notification) in notifications.enumerated() {
                    group.addTask { (index, await self.deliver(notification, event: rendered, logger: eventLogger)) }
                }
                var ordered = [DeliveryReport?](repeating: nil, count: notifications.count)
                for await (index, report) in group { ordered[index] = report }
                return ordered.compactMap { $0 }
            }
        }
        return await complete(event, deliveries: deliveries, notifications: notifications, logger: logger)
    }

    private func complete(_ event: Event, deliveries: [DeliveryReport], notifications: [RenderedNotification], logger: Logger) async -> EventReport {
        let delivered = deliveries.filter { $0.outcome == "delivered" }
        let unresolved = deliveries.filter { $0.outcome == "retry-after" || $0.outcome == "config-error" }
        let status: EventReport.Status = delivered.isEmpty ? .failed : unresolved.isEmpty ? .delivered : .partial
        if mode == .live {
            let now = Date().timeIntervalSince1970
            var history: [HistoryEntry] = []
            var historyUsers: Set<String> = []
            for notification in notifications where delivered.contains(where: { $0.user == notification.token.user }) {
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
                // Watermarks move only when everything that could be delivered was.
                try await store.recordOutcome(deliveries: records, history: history, state: status == .delivered ? event.commitOnDelivery : [],
                                              pipeline: definition.name)
            } catch {
                logger.error("could not record the outcome: \(error)")
            }
        }
        logger.debug("event \(status.rawValue): \(delivered.count) of \(deliveries.count) deliveries accepted")
        return EventReport(eventID: event.id, pipeline: definition.name, user: event.user, status: status,
                           reason: unresolved.first?.reason, deliveries: deliveries)
    }

    private func deliver(_ notification: RenderedNotification, event: Event, logger: Logger) async -> DeliveryReport {
        let token = notification.token
        let transport = definition.transport.stage
        var attempts = 0
        var outcome: TransportOutcome
        do {
            let request = try transport.prepare(notification, context: transportContext)
            onRequest?(request)
            if mode == .dryRun {
                output.print("[\(definition.name)] would send:\n\(request.printable)\n")
                return report(notification, .delivered(providerID: "dry-run"), attempts: 0)
            }
            repeat {
                attempts += 1
                outcome = await transport.send(request, context: transportContext)
                guard case .retryAfter(let hint, let reason) = outcome, attempts < definition.delivery.attempts, !Task.isCancelled else { break }
                let delay = definition.delivery.delay(afterAttempt: attempts, hint: hint)
                if let suppressed = repeatedFailures.admit("retry: \(reason)") {
                    logger.warning("delivery to \(token.masked) will be retried in \(String(format: "%.2f", delay))s: \(reason)\(repeatedFailures.summary(suppressed))")
                }
                try? await Task.sleep(for: .seconds(delay))
            } while true
        } catch {
            outcome = .configError(reason: "\(error)")
        }
        await apply(outcome, to: notification, event: event, attempts: attempts, logger: logger)
        return report(notification, outcome, attempts: attempts)
    }

    private func apply(_ outcome: TransportOutcome, to notification: RenderedNotification, event: Event, attempts: Int, logger: Logger) async {
        let token = notification.token
        switch outcome {
        case .delivered:
            break
        case .retryAfter(_, let reason):
            if let suppressed = repeatedFailures.admit("failed: \(reason)") {
                logger.error("delivery to \(token.masked) failed after \(attempts) attempts: \(reason)\(repeatedFailures.summary(suppressed))")
            }
        case .dropToken(let reason, let since):
            do {
                let removed = try await store.removeToken(pipeline: definition.name, kind: token.kind, token: token.value, unlessUpdatedAfter: since)
                if removed {
                    logger.notice("removed dead \(token.kind) token \(token.masked) of user \(token.user): \(reason)")
                } else {
                    logger.notice("kept \(token.kind) token \(token.masked): re-registered after the provider declared it dead (\(reason))")
                }
            } catch {
                logger.error("could not remove dead token \(token.masked): \(error)")
            }
        case .configError(let reason):
            if reportedConfigErrors.admit(reason) != nil {
                logger.critical("configuration error in pipeline \(definition.name), not retried: \(reason)")
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
