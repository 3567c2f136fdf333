import Foundation
import Tracing

/// Traces events through a pipeline with any swift-distributed-tracing `Tracer`: a span per
/// event, a child per stage and per delivery attempt.
///
/// The tracer is passed in (the daemon's OTLP exporter, a test's in-memory tracer) rather than
/// read from `InstrumentationSystem`: several daemons in one test process must not trace into
/// each other, as with the metrics. Off (nil in `Telemetry`) costs one check per event.
public struct EventTracer: Sendable {
    let tracer: any Tracer

    public init(_ tracer: any Tracer) {
        self.tracer = tracer
    }

    /// The event's span, a child of the caller's span when the event came with a `traceparent`.
    /// It starts when the event was accepted (its queue wait is part of what the caller waits
    /// for), except for a replay, whose acceptance was the dead letter's. nil when the sampler
    /// dropped it: an unsampled event makes no child spans and carries nothing, so sampling 10%
    /// costs little more than a sampler's decision for the other 90%.
    func begin(_ event: Event, pipeline: String, names: SpanNames) -> EventTrace? {
        var context = ServiceContext.topLevel
        if let parent = event.traceParent {
            tracer.extract(["traceparent": parent], into: &context, using: W3CHeaders())
        }
        let now = Date()
        let start = event.replayOf == nil ? min(event.time, now) : now
        let span = tracer.startSpan(names.process, context: context, ofKind: .consumer, at: Self.instant(start))
        guard span.isRecording else { return nil }
        span.attributes["pushpipe.pipeline"] = pipeline
        span.attributes["pushpipe.event.id"] = event.id
        if let user = event.user { span.attributes["pushpipe.user"] = user }
        if let source = event.source { span.attributes["pushpipe.source"] = source }
        if let replayed = event.replayOf { span.attributes["pushpipe.replay_of"] = replayed.eventID }
        var carrier: [String: String] = [:]
        tracer.inject(span.context, into: &carrier, using: W3CHeaders())
        return EventTrace(tracer: tracer, span: span, traceID: carrier["traceparent"].flatMap(Self.sampledTraceID))
    }

    /// The trace id of a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`) whose sampled flag
    /// is set: an id that names no exported trace would send an operator looking for nothing.
    static func sampledTraceID(_ traceParent: String) -> String? {
        let parts = traceParent.split(separator: "-")
        guard parts.count == 4, parts[1].count == 32, let flags = UInt8(parts[3], radix: 16), flags & 1 == 1 else { return nil }
        return String(parts[1])
    }

    static func instant(_ date: Date) -> DefaultTracerClock.Timestamp {
        DefaultTracerClock.Timestamp(nanosecondsSinceEpoch: UInt64(max(0, date.timeIntervalSince1970) * 1_000_000_000))
    }
}

/// A pipeline's span names, made once: one string per stage, not one per event.
struct SpanNames: Sendable {
    let process: String
    let filters: [String]
    let render: String
    let send: String

    init(_ definition: PipelineDefinition) {
        process = "process \(definition.name)"
        filters = definition.filters.map { "filter \($0.id)" }
        render = "render \(definition.renderer.id)"
        send = "send \(definition.transport.id)"
    }
}

/// One event's span on its way through the pipeline (a sampled one: see `EventTracer.begin`).
public struct EventTrace: Sendable {
    let tracer: any Tracer
    let span: any Span
    /// The W3C trace id, when the trace is sampled: in the event's record and its log lines.
    public let traceID: String?

    /// A stage's or an attempt's span, under the event's.
    func child(_ name: String, kind: SpanKind = .internal) -> any Span {
        tracer.startSpan(name, context: span.context, ofKind: kind)
    }

    /// Ends the event's span with what became of it.
    func end(_ report: EventReport) {
        span.attributes["pushpipe.event.status"] = report.status.rawValue
        if let stage = report.stage { span.attributes["pushpipe.stage"] = stage }
        if let code = report.code { span.attributes["pushpipe.code"] = code }
        switch report.status {
        case .failed, .partial:
            span.setStatus(SpanStatus(code: .error, message: report.reason))
        default:
            break
        }
        span.end()
    }
}

/// A W3C trace context as a dictionary of header fields (`traceparent`, `tracestate`).
struct W3CHeaders: Extractor, Injector {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}
