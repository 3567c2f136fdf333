import Foundation
import Logging
import PushPipePostgresTesting
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipePostgres
@testable import PushPipeStages

/// An event's holds are released even when the store refuses a release (an outage, a cut
/// connection, a task cancelled at the drain timeout): a hold left behind would keep its items
/// without notifications for the whole of `hold`.
@Suite(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
struct TimestampDedupeHoldTests {
    /// A hold is short and renewed while its notification is on its way: a daemon that dies
    /// leaves its items held for `hold` (30 s), not for as long as every delivery's retries may
    /// last, which a hold that is never renewed would have to outlive.
    @Test func theHoldsOfANotificationOnItsWayAreRenewed() async throws {
        let directory = try TemporaryDirectory("dedupe-renew")
        defer { directory.remove() }
        let filter = try await TimestampDedupeFilter.games(", hold: 3s", in: directory)
        let location = try await TestStores.freshPostgresDatabase()
        let store = try await PostgresStore(location: location, logger: Logger(label: "test"))
        try await withCleanup(
            {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    let context = StageContext(pipeline: "turns", stage: "filters[0]", store: store, logger: Logger(label: "dedupe"), mode: .live)
                    group.addTask { try await filter.run(context: context) }
                    defer { group.cancelAll() }
                    let until = {
                        try await store.connections.rows("SELECT lease_until FROM work WHERE kind LIKE 'hold:%' AND key = 'u/1'").first?.decode(
                            Double.self
                        ) ?? 0
                    }
                    let event = Event(id: "e1", pipeline: "turns", user: "u", body: ["games": [["game_id": 1, "last_move": 100]]])
                    guard case .pass(let passed) = try await filter.apply(to: event, context: context) else {
                        Issue.record("the new game was dropped")
                        return
                    }
                    let first = try await until()
                    // The delivery takes longer than the hold: the hold is renewed meanwhile.
                    let deadline = ContinuousClock.now + .seconds(15)
                    var renewed = first
                    while ContinuousClock.now < deadline, renewed <= first {
                        try await Task.sleep(for: .milliseconds(200))
                        renewed = try await until()
                    }
                    #expect(renewed > first, "renewed while on its way")
                    await passed.onComplete?(EventReport(eventID: "e1", pipeline: "turns", user: "u", status: .delivered))
                    #expect(try await until() == 0, "released when it ended")
                }
            },
            cleanup: { try? await store.close() }
        )
    }

    @Test func holdsTheStoreRefusedToReleaseAreReleasedOnceItAnswers() async throws {
        let directory = try TemporaryDirectory("dedupe-holds")
        defer { directory.remove() }
        let filter = try await TimestampDedupeFilter.games(in: directory)
        let url = try await TestStores.freshPostgresURL() + "&connect_timeout=3"
        let location = try PostgresLocation(parsing: url)
        let store = try await PostgresStore(location: location, logger: Logger(label: "test"))
        let outage = try DatabaseOutage(url: url)
        try await withCleanup(
            {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await outage.run() }
                    let context = StageContext(pipeline: "turns", stage: "filters[0]", store: store, logger: Logger(label: "dedupe"), mode: .live)
                    group.addTask { try await filter.run(context: context) }
                    defer { group.cancelAll() }
                    let event = Event(
                        id: "e1",
                        pipeline: "turns",
                        user: "u",
                        body: ["games": [["game_id": 1, "last_move": 100], ["game_id": 2, "last_move": 200]]]
                    )
                    guard case .pass(let passed) = try await filter.apply(to: event, context: context) else {
                        Issue.record("new games were dropped")
                        return
                    }
                    // Held while on its way: the same games at the next check are not sent again.
                    guard case .drop = try await filter.apply(to: event, context: context) else {
                        Issue.record("the games were not held")
                        return
                    }
                    // The event ends while the database is away: its release is refused.
                    try await outage.begin()
                    await passed.onComplete?(EventReport(eventID: "e1", pipeline: "turns", user: "u", status: .failed))
                    #expect(filter.holdsTaken.unreleasedCount == 2, "the refused release is kept")
                    try await outage.end()
                    // Released once the store answers, long before the 10-minute hold would lapse.
                    let deadline = ContinuousClock.now + .seconds(60)
                    var free: Set<String> = []
                    while ContinuousClock.now < deadline {
                        free = (try? await store.pipeline("turns").hold(keys: ["u/1", "u/2"], stage: "moves", lease: .seconds(600))) ?? []
                        if free == ["u/1", "u/2"] { break }
                        try await Task.sleep(for: .milliseconds(200))
                    }
                    #expect(free == ["u/1", "u/2"], "the games are free again")
                }
            },
            cleanup: { try? await store.close() }
        )
    }
}

extension TimestampDedupeHoldTests {
    /// A daemon knows which notifications are on their way here, whatever the store says of the
    /// hold: when a delivery cannot record its watermark during an outage, the hold's renewals
    /// fail and the hold lapses in the database, and the daemon's own next check must not take
    /// the items again and notify a game twice.
    @Test func itemsOnTheirWayHereAreNotTakenAgainWhenTheirHoldLapsedInTheStore() async throws {
        let directory = try TemporaryDirectory("dedupe-lapsed")
        defer { directory.remove() }
        let filter = try await TimestampDedupeFilter.games(in: directory)
        let location = try await TestStores.freshPostgresDatabase()
        let store = try await PostgresStore(location: location, logger: Logger(label: "test"))
        try await withCleanup(
            {
                let context = StageContext(pipeline: "turns", stage: "filters[0]", store: store, logger: Logger(label: "dedupe"), mode: .live)
                let event = Event(id: "e1", pipeline: "turns", user: "u", body: ["games": [["game_id": 1, "last_move": 100]]])
                guard case .pass(let passed) = try await filter.apply(to: event, context: context) else {
                    Issue.record("the new game was dropped")
                    return
                }
                // The store was away for longer than the hold: in the database, the hold has lapsed.
                _ = try await store.connections.rows("UPDATE work SET lease_until = 0 WHERE kind LIKE 'hold:%' AND key = 'u/1'")
                guard case .drop(_, let code, _) = try await filter.apply(to: event, context: context) else {
                    Issue.record("the game on its way was taken again")
                    return
                }
                #expect(code == "in_flight")
                await passed.onComplete?(EventReport(eventID: "e1", pipeline: "turns", user: "u", status: .failed))
                guard case .pass = try await filter.apply(to: event, context: context) else {
                    Issue.record("once its notification ended, the game is taken again (its watermark did not move)")
                    return
                }
            },
            cleanup: { try? await store.close() }
        )
    }
}
