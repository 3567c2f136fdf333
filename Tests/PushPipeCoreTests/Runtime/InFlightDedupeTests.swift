import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// A poller emits the same items at every check; while their notification is
/// being delivered (in backoff, say) they must not go out a second time.
@Suite struct InFlightDedupeTests {
    static let pipeline = """
        filters:
          - {type: dedupe.timestamp, items: games, timestamp: last_move, item_id: game_id}
        renderer: {type: json.template, payload: {game: {$from: "games[0].game_id"}}}
        delivery: {attempts: 2, backoff: 10ms, max_backoff: 10ms}
        """

    static let games: JSON = ["games": [["game_id": 1, "last_move": 100]]]

    /// Starts delivering `games` to alice and returns once the transport holds the send.
    func deliveryInFlight(_ pipeline: ScriptedPipeline, processor: EventProcessor) async throws -> Task<EventReport, Never> {
        try await pipeline.register("alice", String(repeating: "ab", count: 16))
        pipeline.transport.hold()
        let first = Task { await processor.process(pipeline.event(user: "alice", Self.games)) }
        await pipeline.transport.waitForSends(1)
        return first
    }

    @Test func anItemBeingDeliveredIsNotEmittedAgainAndTheWatermarkMovesAfterDelivery() async throws {
        try await ScriptedPipeline.with(Self.pipeline) { pipeline in
            let processor = pipeline.processor
            let first = try await deliveryInFlight(pipeline, processor: processor)

            let whileInFlight = await processor.process(pipeline.event(user: "alice", Self.games))
            #expect(whileInFlight.status == .filtered)
            #expect(whileInFlight.reason?.contains("still being delivered") == true)

            pipeline.transport.release()
            #expect(await first.value.status == .delivered)
            let afterDelivery = await processor.process(pipeline.event(user: "alice", Self.games))
            #expect(afterDelivery.status == .filtered)
            #expect(afterDelivery.reason?.contains("nothing newer") == true, "the watermark moved")
            #expect(pipeline.transport.sends.count == 1)
        }
    }

    @Test func anItemWhoseDeliveryFailedForGoodIsRetriedByTheNextCheck() async throws {
        try await ScriptedPipeline.with(Self.pipeline) { pipeline in
            try await pipeline.register("alice", String(repeating: "ab", count: 16))
            let processor = pipeline.processor
            pipeline.transport.answer(.retryAfter(seconds: nil, reason: ProviderReason(code: "ServiceUnavailable", "ServiceUnavailable")))
            #expect(await processor.process(pipeline.event(user: "alice", Self.games)).status == .failed)
            pipeline.transport.answer(.delivered(providerID: "ok"))
            #expect(await processor.process(pipeline.event(user: "alice", Self.games)).status == .delivered, "the watermark stayed")
            #expect(pipeline.transport.sends.count == 3)
        }
    }

    @Test func otherItemsOfTheSameUserAreNotHeldBack() async throws {
        try await ScriptedPipeline.with(Self.pipeline) { pipeline in
            let processor = pipeline.processor
            let first = try await deliveryInFlight(pipeline, processor: processor)
            let both: JSON = ["games": [["game_id": 1, "last_move": 100], ["game_id": 2, "last_move": 200]]]
            let second = Task { await processor.process(pipeline.event(user: "alice", both)) }
            await pipeline.transport.waitForSends(2)
            pipeline.transport.release()
            #expect(await first.value.status == .delivered)
            let report = await second.value
            #expect(report.status == .delivered)
            #expect(report.deliveries.first?.payload["game"] == 2, "only the game not in flight")
        }
    }
}
