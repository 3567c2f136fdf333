import Foundation
import GRDB
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipeSQLite

/// Rows reach the per-user index in batches; reads must see indexed and unindexed rows alike.
@Suite struct SQLiteStoreUserIndexTests {
    func outcome(_ event: Int, user: String = "u", outcome: DeliveryOutcome = .delivered) -> OutcomeWrite {
        write([row(event, user: user, outcome: outcome)])
    }

    /// Delivery rows alone, as a batch of deliveries to users writes them.
    func write(_ rows: [DeliveryRow]) -> OutcomeWrite {
        .outcome(deliveries: rows, state: [], events: [], webhooks: [], finishing: [], progress: [], pipeline: "p")
    }

    func row(_ event: Int, user: String, outcome: DeliveryOutcome = .delivered) -> DeliveryRow {
        let delivered = outcome == .delivered
        return .of(
            "e\(event)",
            user: user,
            token: "t\(event)",
            outcome: outcome,
            providerID: "id\(event)",
            at: Double(event),
            history: delivered ? ["n": .int(Int64(event))] : nil
        )
    }

    /// One write holding the deliveries of several events, as a worker's batch records them.
    func oneWrite(_ events: ClosedRange<Int>) -> OutcomeWrite {
        write(events.map { row($0, user: "user\($0 % 50)") })
    }

    func counts(_ store: SQLiteStore) async throws -> (indexed: Int, indexedThrough: Int64) {
        try await store.database.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM user_deliveries") ?? -1, try SQLiteStore.indexedThrough(in: db))
        }
    }

    /// Each commit says when it runs, on the writer's clock.
    @Test func theTailIsIndexedOnceItHoldsABatchOrHasWaitedASecond() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let schedule = UserIndexSchedule()
        let start = ContinuousClock.now
        func commit(_ writes: [OutcomeWrite], after seconds: Double) async throws {
            try await store.database.write { db in
                try SQLiteStore.commit(writes, in: db, indexing: schedule, at: Date().timeIntervalSince1970, now: start + .seconds(seconds))
            }
        }
        // Light traffic: a row waits in the tail...
        try await commit([outcome(1)], after: 0)
        #expect(try await counts(store) == (0, 0))
        try await commit([outcome(2)], after: 0.9)
        #expect(try await counts(store) == (0, 0))
        // ...until rows have waited a second: then the next commit indexes the whole tail.
        try await commit([outcome(3)], after: 1.0)
        #expect(try await counts(store) == (3, 3))
        // A worker's batch is one write of many rows for many users: it waits in the tail too
        // (it was indexed at once when the rule counted writes: a page per user per commit)...
        try await commit([oneWrite(4...103)], after: 1.5)
        #expect(try await counts(store) == (3, 3))
        // ...until the tail holds a batch, however short the wait.
        try await commit((104..<(Int(UserIndexSchedule.batch) + 4)).map { outcome($0, user: "user\($0 % 50)") }, after: 1.6)
        let total = Int(UserIndexSchedule.batch) + 3
        #expect(try await counts(store) == (total, Int64(total)))
        // Nothing waits: the next row starts a new wait.
        try await commit([outcome(total + 1)], after: 5)
        #expect(try await counts(store) == (total, Int64(total)))
        try await store.close()
    }

    @Test func readsSeeTheTailAndTheIndexAsOneNewestFirstList() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        // The writer's clock stands still: nothing is indexed for having waited.
        let schedule = UserIndexSchedule()
        let now = ContinuousClock.now
        try await store.database.write { db in
            try SQLiteStore.commit((1...3).map { outcome($0) }, in: db, indexing: schedule, at: Date().timeIntervalSince1970, now: now)
            try SQLiteStore.indexUserDeliveries(in: db)
        }
        // Rows 4-7 stay in the tail, with another user's rows and a failed delivery between them.
        try await store.database.write { db in
            try SQLiteStore.commit(
                [outcome(4), outcome(5, user: "other"), outcome(6, outcome: .dropToken), outcome(7)],
                in: db,
                indexing: schedule,
                at: Date().timeIntervalSince1970,
                now: now
            )
        }
        #expect(try await counts(store) == (3, 3))
        let first = try await store.pipeline("p").history(user: "u", limit: 2, before: nil)
        #expect(first.map(\.record) == [["n": 7], ["n": 4]])
        // A page that starts in the tail and ends in the index.
        let second = try await store.pipeline("p").history(user: "u", limit: 2, before: first.last?.id)
        #expect(second.map(\.record) == [["n": 3], ["n": 2]])
        let third = try await store.pipeline("p").history(user: "u", limit: 5, before: second.last?.id)
        #expect(third.map(\.record) == [["n": 1]])
        #expect(try await store.pipeline("p").history(user: "other", limit: 5, before: nil).map(\.record) == [["n": 5]])
        #expect(try await store.pipeline("p").lastDelivery(user: "u")?.eventID == "e7")
        // Once indexed, the same reads give the same answers.
        try await store.database.write { db in try SQLiteStore.indexUserDeliveries(after: 3, through: 7, in: db) }
        #expect(try await counts(store) == (7, 7))
        #expect(
            try await store.pipeline("p").history(user: "u", limit: 10, before: nil).map(\.record) == [
                ["n": 7], ["n": 4], ["n": 3], ["n": 2], ["n": 1],
            ]
        )
        #expect(try await store.pipeline("p").lastDelivery(user: "u")?.eventID == "e7")
        try await store.close()
    }

    /// Both reads must seek (a scan of `deliveries` would read every notification ever sent).
    @Test func readsSeekAndNeverScanTheTable() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        for rows in [SQLiteStore.UserRows.history, .delivered] {
            for query in [rows.tailQuery, rows.indexQuery] {
                let plan = try await store.database.read { db in
                    try Row.fetchAll(
                        db,
                        sql: "EXPLAIN QUERY PLAN " + query,
                        arguments: StatementArguments(Array(repeating: 1, count: 5).prefix(query.filter { $0 == "?" }.count))
                    )
                    .map { $0["detail"] as String }
                }
                #expect(plan.allSatisfy { $0.hasPrefix("SEARCH") }, "\(plan)")
                #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "no sort: \(plan)")
            }
        }
        try await store.close()
    }
}
