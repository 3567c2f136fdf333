import Foundation
import Logging
import Synchronization

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
    private let reportedConfigErrors = ReportedErrors()

    public init(definition: PipelineDefinition, store: any Store, logger: Logger, mode: RunMode, output: OutputSink = .standardOutput) {
        self.definition = definition
        self.store = store
        self.logger = logger
        self.mode = mode
        self.output = output
    }

    var context: StageContext {
        StageContext(pipeline: definition.name, stage: "pipeline", store: store, logger: logger, mode: mode)
    }

    public func process(_ incoming: Event) async -> EventReport {
        let report = await run(incoming)
        if let onComplete = incoming.onComplete { await onComplete(report) }
        return report
    }

    private func run(_ incoming: Event) async -> EventReport {
        var event = incoming
        var logger = self.logger
        logger[metadataKey: "event"] = .string(event.id)
        func failed(_ reason: String) -> EventReport {
            logger.error("event failed: \(reason)")
            return EventReport(eventID: event.id, pipeline: definition.name, user: event.user, status: .failed, reason: reason)
        }
        for filter in definition.filters {
            do {
                switch try await filter.stage.apply(to: event, context: context.forStage(filter.id)) {
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
            notifications = try await definition.renderer.stage.render(event, context: context.forStage(definition.renderer.id))
        } catch {
            return failed("renderer (\(definition.renderer.type)): \(error)")
        }
        guard !notifications.isEmpty else {
            return EventReport(eventID: event.id, pipeline: definition.name, user: event.user, status: .noRecipients,
                               reason: "no registered token for \(event.user.map { "user \($0)" } ?? "any user")")
        }
        let rendered = event
        let eventLogger = logger
        let deliveries = await withTaskGroup(of: DeliveryReport.self) { group in
            for notification in notifications {
                group.addTask { await self.deliver(notification, event: rendered, logger: eventLogger) }
            }
            return await group.reduce(into: [DeliveryReport]()) { $0.append($1) }
        }
        return await complete(event, deliveries: deliveries, notifications: notifications, logger: logger)
    }

    private func complete(_ event: Event, deliveries: [DeliveryReport], notifications: [RenderedNotification], logger: Logger) async -> EventReport {
        let delivered = deliveries.filter { $0.outcome == "delivered" }
        let unresolved = deliveries.filter { $0.outcome == "retry-after" || $0.outcome == "config-error" }
        let status: EventReport.Status = delivered.isEmpty ? .failed : unresolved.isEmpty ? .delivered : .partial
        if mode == .live {
            do {
                var historyUsers: Set<String> = []
                for notification in notifications where delivered.contains(where: { $0.user == notification.token.user }) {
                    guard historyUsers.insert(notification.token.user).inserted else { continue }
                    try await store.appendHistory(HistoryEntry(pipeline: definition.name, user: notification.token.user, eventID: event.id,
                                                               createdAt: Date().timeIntervalSince1970,
                                                               record: notification.historyRecord ?? notification.payload))
                }
                // Watermarks move only when everything that could be delivered was.
                if status == .delivered { try await store.setState(event.commitOnDelivery, pipeline: definition.name) }
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
        let transportContext = context.forStage(definition.transport.id)
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
                logger.warning("delivery to \(token.masked) will be retried in \(String(format: "%.2f", delay))s: \(reason)")
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
            logger.error("delivery to \(token.masked) failed after \(attempts) attempts: \(reason)")
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
            if reportedConfigErrors.firstTime(reason) {
                logger.critical("configuration error in pipeline \(definition.name), not retried: \(reason)")
            }
        }
        guard mode == .live else { return }
        var providerID: String?
        if case .delivered(let id) = outcome { providerID = id }
        do {
            try await store.recordDelivery(DeliveryRecord(
                pipeline: definition.name, eventID: event.id, user: token.user, tokenKind: token.kind, token: token.value,
                outcome: outcome.name, reason: outcome.reason, providerID: providerID, attempts: attempts,
                createdAt: Date().timeIntervalSince1970))
        } catch {
            logger.error("could not record the delivery: \(error)")
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

/// Configuration errors are logged loudly once per pipeline, not once per event.
final class ReportedErrors: Sendable {
    private let seen = Mutex(Set<String>())
    func firstTime(_ reason: String) -> Bool { seen.withLock { $0.insert(reason).inserted } }
}
