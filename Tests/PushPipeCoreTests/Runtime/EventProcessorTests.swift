import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

@Suite struct EventProcessorTests {
    static let renderer = """
        renderer: {type: json.template, payload: {text: "{{text}}"}}
        """

    /// A cancelled backoff sleep ends the retry loop without another send. Stopped in its
    /// retries (the drain timeout), the event is no dead letter: its source sends it again, and
    /// a replay too would send it twice.
    @Test func aCancelledBackoffSendsNoFurtherAttempt() async throws {
        try await ScriptedPipeline.with(Self.renderer + "\ndelivery: {attempts: 5, backoff: 30s, max_backoff: 30s}") { pipeline in
            try await pipeline.register("alice", String(repeating: "ab", count: 16))
            pipeline.transport.answer(.retryAfter(seconds: nil, reason: ProviderReason(code: "ServiceUnavailable", "ServiceUnavailable")))
            let (logger, messages) = StreamingLogHandler.logger()
            let processor = pipeline.processor(logger: logger)
            let event = pipeline.event(user: "alice", ["text": "hi"])
            let processing = Task { await processor.process(event) }
            // The retry is scheduled: the processor is going into (or is in) its backoff sleep.
            for await message in messages where message.contains("will be retried") { break }
            #expect(
                try await pipeline.store.eventRecords(eventID: event.id, pipeline: nil).records.first?.state == .processing,
                "its retries are under way"
            )
            processing.cancel()
            let report = await processing.value
            #expect(try await pipeline.store.deadLetterCounts().isEmpty)
            #expect(pipeline.transport.sends.count == 1, "cancelled means no further attempt")
            #expect(report.status == .failed)
            #expect(report.deliveries.first?.outcome == .retryAfter)
            #expect(report.deliveries.first?.reasonCode == "ServiceUnavailable", "the report keeps the reason's code")
        }
    }

    /// A broadcast goes out page by page with bounded concurrency, not every token loaded and a
    /// task started per token at once.
    @Test func aBroadcastGoesOutPageByPageWithBoundedConcurrency() async throws {
        try await ScriptedPipeline.with(Self.renderer + "\ndelivery: {fanout: 8}") { pipeline in
            let users = 2_500
            for index in 0..<users {
                try await pipeline.register(String(format: "user-%05d", index), String(format: "%032x", index + 1))
            }
            let report = await pipeline.processor.process(pipeline.event(user: nil, ["text": "to everyone"]))
            let sends = pipeline.transport.sends
            #expect(sends.count == users)
            #expect(Set(sends).count == users, "every token exactly once")
            #expect(pipeline.transport.mostRunning <= 8, "at most `fanout` deliveries at once, saw \(pipeline.transport.mostRunning)")
            #expect(pipeline.transport.mostRunning > 1, "deliveries do run concurrently")
            #expect(report.status == .delivered)
            #expect(report.deliveries.count == 1000, "the report keeps the first deliveries")
            #expect(report.omittedDeliveries == users - 1000)
            let history = try await pipeline.store.pipeline(pipeline.definition.name).history(user: "user-02499", limit: 10, before: nil)
            #expect(history.count == 1, "the last page is recorded too")
        }
    }

    /// An event reaches a user on two of three devices (the first is dead): the user's history
    /// holds it once, carried by the first delivered device's row, and each device has its row.
    @Test func aUsersHistoryHoldsAnEventOnceWhateverItsDevices() async throws {
        try await ScriptedPipeline.with(Self.renderer) { pipeline in
            let tokens = ["aa", "bb", "cc"].map { String(repeating: $0, count: 16) }
            for token in tokens { try await pipeline.register("alice", token) }
            pipeline.transport.script(tokens[0], [.dropToken(reason: ProviderReason(code: "Unregistered", "Unregistered"), since: nil)])
            let report = await pipeline.processor.process(pipeline.event(user: "alice", ["text": "hi"]))
            #expect(report.deliveries.map(\.outcome).sorted { $0.rawValue < $1.rawValue } == [.delivered, .delivered, .dropToken])
            let store = pipeline.store.pipeline(pipeline.definition.name)
            let history = try await store.history(user: "alice", limit: 10, before: nil)
            #expect(history.map(\.record) == [["text": "hi"]])
            #expect(try await store.lastDelivery(user: "alice")?.delivery.outcome == .delivered)
        }
    }
}
