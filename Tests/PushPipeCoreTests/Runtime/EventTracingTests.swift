import Foundation
import InMemoryTracing
import Logging
import PushPipeTesting
import Testing
import Tracing

@testable import PushPipeCore

/// One span per event, with a child per stage and per delivery attempt, through any
/// swift-distributed-tracing tracer (here the library's in-memory one).
@Suite struct EventTracingTests {
    static let body = """
        filters:
          - {type: settings.enabled}
        renderer: {type: json.template, payload: {text: "{{text}}"}}
        delivery: {attempts: 3, backoff: 10ms, max_backoff: 20ms}
        """

    func processor(_ pipeline: ScriptedPipeline, tracer: InMemoryTracer) -> EventProcessor {
        EventProcessor(
            definition: pipeline.definition,
            store: pipeline.store,
            logger: Logger(label: "traced"),
            mode: .live,
            output: OutputSink { _ in },
            telemetry: Telemetry(tracer: tracer)
        )
    }

    @Test func anEventsSpanHasAChildPerStageAndPerAttempt() async throws {
        try await ScriptedPipeline.with(Self.body) { pipeline in
            let token = String(repeating: "ab", count: 16)
            try await pipeline.register("alice", token)
            pipeline.transport.script(token, [.retryAfter(seconds: nil, reason: ProviderReason(code: "ServiceUnavailable", "ServiceUnavailable"))])
            let tracer = InMemoryTracer()
            let report = await processor(pipeline, tracer: tracer).process(pipeline.event(user: "alice", ["text": "hi"]))
            #expect(report.status == .delivered)

            let spans = tracer.finishedSpans
            let event = try #require(spans.first { $0.operationName == "process scripted" })
            #expect(event.kind == .consumer)
            #expect(event.parentSpanID == nil, "no caller's trace: the event starts one")
            #expect(event.attributes["pushpipe.event.status"]?.toSpanAttribute() == "delivered")
            let children = spans.filter { $0.parentSpanID == event.spanID }
            #expect(Set(spans.map(\.traceID)) == [event.traceID], "one trace")
            let filter = pipeline.definition.filters[0].id
            let renderer = pipeline.definition.renderer.id
            let transport = pipeline.definition.transport.id
            #expect(
                children.map(\.operationName) == ["filter \(filter)", "render \(renderer)", "send \(transport)", "send \(transport)"],
                "\(spans.map(\.operationName))"
            )
            let attempts = children.filter { $0.operationName.hasPrefix("send") }
            #expect(attempts.map { $0.attributes["pushpipe.attempt"]?.toSpanAttribute() } == [1, 2])
            #expect(attempts.map { $0.attributes["pushpipe.outcome"]?.toSpanAttribute() } == ["retry-after", "delivered"])
            #expect(
                attempts.map { $0.attributes["pushpipe.token"]?.toSpanAttribute() } == [
                    .string(String(token.prefix(8)) + "…"),
                    .string(String(token.prefix(8)) + "…"),
                ],
                "tokens are masked"
            )
            #expect(attempts.first?.status?.code == .error && attempts.last?.status == nil)
            #expect(attempts.allSatisfy { $0.kind == .client })
            #expect(
                event.endInstant.nanosecondsSinceEpoch >= attempts.last!.endInstant.nanosecondsSinceEpoch,
                "the event's span ends once its last attempt did"
            )
        }
    }

    @Test func aDroppedEventsSpanNamesTheFilterAndItsCode() async throws {
        try await ScriptedPipeline.with(Self.body) { pipeline in
            try await pipeline.register("quiet", String(repeating: "cd", count: 16))
            try await pipeline.store.pipeline(pipeline.definition.name).setSettings(["enabled": false], user: "quiet")
            let tracer = InMemoryTracer()
            let report = await processor(pipeline, tracer: tracer).process(pipeline.event(user: "quiet", ["text": "shh"]))
            #expect(report.status == .filtered)
            let spans = tracer.finishedSpans
            #expect(spans.map(\.operationName) == ["filter \(pipeline.definition.filters[0].id)", "process scripted"])
            #expect(spans.first?.attributes["pushpipe.drop.code"]?.toSpanAttribute() == .string(report.code ?? ""))
            #expect(spans.last?.attributes["pushpipe.event.status"]?.toSpanAttribute() == "filtered")
            #expect(pipeline.transport.sends.isEmpty)
        }
    }

    /// The trace id a record and log lines name is the W3C one, and only a sampled trace's.
    @Test func onlyASampledTraceParentNamesATrace() {
        #expect(EventTracer.sampledTraceID("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(EventTracer.sampledTraceID("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00") == nil)
        #expect(EventTracer.sampledTraceID("garbage") == nil)
    }
}
