import Foundation
import Logging
import PushPipeCore
import PushPipeSQLite
import PushPipeTesting
import Testing

@testable import PushPipeStages

/// Watermarks are bounded: those not moved for `forget_after` belong to
/// users and items that are gone, and are removed.
@Suite struct TimestampDedupeForgetTests {
    @Test func watermarksNotMovedForALongTimeAreRemoved() async throws {
        let directory = try TemporaryDirectory("dedupe-forget")
        defer { directory.remove() }
        let filter = try await TimestampDedupeFilter.games(", forget_after: 30d", in: directory)
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        try await withCleanup(
            {
                let context = StageContext(pipeline: "turns", stage: "filters[0]", store: store, logger: Logger(label: "dedupe"), mode: .live)
                let now = Date().timeIntervalSince1970
                let days = { (count: Double) in JSON.int(Int64((now - count * 86400) * 1000)) }
                let event = Event(
                    id: "e1",
                    pipeline: "turns",
                    user: "u",
                    body: ["games": [["game_id": 1, "last_move": days(40)], ["game_id": 2, "last_move": days(1)]]]
                )
                guard case .pass(let passed) = try await filter.apply(to: event, context: context) else {
                    Issue.record("the recent game was dropped")
                    return
                }
                #expect(passed.body["games"]?.arrayValue?.compactMap { $0["game_id"]?.intValue } == [2, 1], "newest first")
                await passed.onComplete?(EventReport(eventID: "e1", pipeline: "turns", user: "u", status: .delivered))
                try await store.pipeline("turns").setState(passed.commitOnDelivery)
                #expect(try await store.pipeline("turns").states(stage: "moves", keys: ["u/1", "u/2"]).count == 2)
                // A month on, the watermarks were not moved: they go; a day on, they stay.
                #expect(await filter.forgetOldWatermarks(context: context, now: Date().addingTimeInterval(86400)) == 0)
                #expect(await filter.forgetOldWatermarks(context: context, now: Date().addingTimeInterval(31 * 86400)) == 2)
                #expect(try await store.pipeline("turns").states(stage: "moves", keys: ["u/1", "u/2"]).isEmpty)
            },
            cleanup: { try? await store.close() }
        )
    }
}
