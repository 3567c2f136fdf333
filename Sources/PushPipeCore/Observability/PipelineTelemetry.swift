import CoreMetrics
import Foundation

/// One pipeline's side of `Telemetry`: what the runtime reports as an event goes through,
/// each in one call that feeds the metrics, the status page and the taps alike.
///
/// A class: the processor's tasks and the taps' closures capture it for every event, and a
/// copy of a struct would retain each of its counters and logs one by one.
public final class PipelineTelemetry: Sendable {
    public let telemetry: Telemetry
    public let pipeline: String
    let transport: String
    let transportType: String
    // The series every event and every delivery touches, resolved once.
    private let receivedBySource: [String: CoreMetrics.Counter]
    private let renderedCounter: CoreMetrics.Counter
    private let delivered: CoreMetrics.Counter
    private let latency: CoreMetrics.Timer
    private let retries: CoreMetrics.Counter
    private let activity: RecentActivity.PipelineLog

    public init(telemetry: Telemetry, definition: PipelineDefinition) {
        self.telemetry = telemetry
        pipeline = definition.name
        transport = definition.transport.id
        transportType = definition.transport.type
        let pipeline = definition.name
        receivedBySource = Dictionary(
            uniqueKeysWithValues: definition.sources.map {
                ($0.id, telemetry.counter(.eventsReceived, [("pipeline", pipeline), ("stage", $0.id)]))
            }
        )
        renderedCounter = telemetry.counter(.notificationsRendered, [("pipeline", pipeline), ("stage", definition.renderer.id)])
        delivered = telemetry.counter(
            .deliveries,
            [("pipeline", pipeline), ("transport", transportType), ("outcome", ReportedOutcome.delivered.rawValue), ("reason", "")]
        )
        latency = telemetry.timer(.deliveryLatency, [("pipeline", pipeline), ("transport", transportType)])
        retries = telemetry.counter(.deliveryRetries, [("pipeline", pipeline), ("transport", transportType)])
        activity = telemetry.activity.log(for: pipeline)
    }

    var tap: TapHub { telemetry.tap }

    public func received(_ event: Event, stage: String) {
        if let counter = receivedBySource[stage] {
            counter.increment()
        } else {
            telemetry.increment(.eventsReceived, [("pipeline", pipeline), ("stage", stage)])
        }
        activity.update { $0.received += 1 }
        tap.publish(pipeline: pipeline, stage: stage) {
            record(stage: stage, kind: "source", event: event, ["what": "event", "body": event.body])
        }
    }

    func passed(_ event: Event, stage: String, type: String) {
        tap.publish(pipeline: pipeline, stage: stage) { record(stage: stage, kind: "filter", event: event, ["what": "pass", "type": .string(type)]) }
    }

    func dropped(_ event: Event, stage: String, type: String, reason: String, code: String) {
        telemetry.increment(.eventsDropped, [("pipeline", pipeline), ("stage", stage), ("type", type), ("reason", code)])
        activity.update { $0.dropped += 1 }
        tap.publish(pipeline: pipeline, stage: stage) {
            record(
                stage: stage,
                kind: "filter",
                event: event,
                ["what": "drop", "type": .string(type), "reason": .string(reason), "code": .string(code)]
            )
        }
    }

    func held(_ event: Event, stage: String, type: String, _ hold: EventHold) {
        telemetry.increment(.holds, [("pipeline", pipeline), ("stage", stage), ("type", type), ("reason", hold.code)])
        tap.publish(pipeline: pipeline, stage: stage) {
            record(
                stage: stage,
                kind: "filter",
                event: event,
                [
                    "what": .string(hold.kind.rawValue), "type": .string(type), "reason": .string(hold.reason), "code": .string(hold.code),
                    "until": .string(EventRecord.timestamp(hold.until.timeIntervalSince1970)),
                ]
            )
        }
    }

    func failed(_ event: Event, stage: String, reason: String) {
        telemetry.increment(.eventsFailed, [("pipeline", pipeline), ("stage", stage)])
        activity.update { $0.failed += 1 }
        activity.problem(stage: stage, "event \(event.id): \(reason)")
        tap.publish(pipeline: pipeline, stage: stage) {
            record(stage: stage, kind: "event", event: event, ["what": "failed", "reason": .string(reason)])
        }
    }

    func rendered(_ event: Event, _ notifications: [RenderedNotification], stage: String) {
        renderedCounter.increment(by: notifications.count)
        activity.update { $0.rendered += notifications.count }
        for notification in notifications {
            tap.publish(pipeline: pipeline, stage: stage) {
                record(
                    stage: stage,
                    kind: "renderer",
                    event: event,
                    [
                        "what": "rendered", "user": .string(notification.token.user),
                        "token_kind": .string(notification.token.kind),
                        "token": .string(notification.token.masked), "payload": notification.payload,
                    ]
                )
            }
        }
    }

    func noRecipients(_ event: Event, stage: String) {
        tap.publish(pipeline: pipeline, stage: stage) { record(stage: stage, kind: "renderer", event: event, ["what": "no_recipients"]) }
    }

    func request(_ event: Event, _ request: OutgoingRequest) {
        tap.publish(pipeline: pipeline, stage: transport) {
            record(stage: transport, kind: "transport", event: event, ["what": "request", "request": request.maskedJSON])
        }
    }

    func retry() {
        retries.increment()
        activity.update { $0.retries += 1 }
    }

    func tokenPruned() {
        telemetry.increment(.tokensPruned, [("pipeline", pipeline)])
        activity.update { $0.tokensPruned += 1 }
    }

    func delivery(
        _ event: Event,
        _ notification: RenderedNotification,
        outcome: ReportedOutcome,
        reason providerReason: ProviderReason?,
        attempts: Int
    ) {
        let reason = providerReason?.text
        if outcome == .delivered {
            delivered.increment()
        } else {
            telemetry.increment(
                .deliveries,
                [
                    ("pipeline", pipeline), ("transport", transportType), ("outcome", outcome.rawValue),
                    ("reason", telemetry.reasonLabel(providerReason?.code)),
                ]
            )
        }
        let now = Date()
        if outcome.wasAttempted {
            latency.recordNanoseconds(Int64(max(0, now.timeIntervalSince(event.time)) * 1e9))
        }
        let token = notification.token
        activity.delivery(.init(time: now, user: token.user, unmaskedToken: token.value, outcome: outcome, reason: reason))
        if outcome == .configError || outcome == .refused, let reason {
            activity.problem(stage: transport, "\(token.masked): \(reason)")
        }
        tap.publish(pipeline: pipeline, stage: transport) {
            var fields: [String: JSON] = [
                "what": "outcome", "outcome": .string(outcome.rawValue), "user": .string(token.user),
                "token": .string(token.masked), "attempts": .int(Int64(attempts)),
            ]
            if let reason { fields["reason"] = .string(reason) }
            return record(stage: transport, kind: "transport", event: event, fields)
        }
    }

    func record(stage: String, kind: String, event: Event, _ fields: [String: JSON]) -> JSON {
        var record = fields
        record["time"] = .double((Date().timeIntervalSince1970 * 1000).rounded() / 1000)
        record["pipeline"] = .string(pipeline)
        record["stage"] = .string(stage)
        record["kind"] = .string(kind)
        record["event"] = .string(event.id)
        if let user = event.user, record["user"] == nil { record["user"] = .string(user) }
        return .object(record)
    }
}
