import Foundation
import GRDB
@testable import PushPipe
import PushPipeTesting
import Testing

/// Rows reach the per-user index in batches; reads must see indexed and unindexed rows alike.
@Suite struct SQLiteStoreUserIndexTests {
    func outcome(_ event: Int, user: String = "u", outcome: String = "delivered") -> OutcomeWrite {
        .outcome(deliveries: [DeliveryRecord(pipeline: "p", eventID: "e\(event)", user: user, tokenKind: "device", token: "t\(event)",
                                             outcome: outcome, reason: nil, providerID: "id\(event)", attempts: 1, createdAt: Double(event))],
                 history: outcome == "delivered" ? [HistoryEntry(pipeline: "p", user: user, eventID: "e\(event)", createdAt: Double(event),
                                                                 record: ["n": .int(Int64(event))])] : [],
                 state: [], pipeline: "p")
    }

    func counts(_ store: SQLiteStore) async throws -> (indexed: Int, indexedThrough: Int64) {
        try await store.database.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM user_deliveries") ?? -1, try SQLiteStore.indexedThrough(in: db))
        }
    }

    @Test func aBusyCommitLeavesItsRowsInTheTailUntilTheTailIsFull() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        // A commit of one write (light traffic) is indexed at once.
        try await store.database.write { db in try SQLiteStore.commit([outcome(1)], in: db) }
        #expect(try await counts(store) == (1, 1))
        // A commit of several writes (a burst) is not...
        try await store.database.write { db in try SQLiteStore.commit([outcome(2), outcome(3)], in: db) }
        #expect(try await counts(store) == (1, 1))
        // ...until the tail reaches a batch.
        let burst = (4..<(Int(SQLiteStore.indexBatch) + 2)).map { outcome($0, user: "user\($0 % 50)") }
        try await store.database.write { db in try SQLiteStore.commit(burst, in: db) }
        let total = Int(SQLiteStore.indexBatch) + 1
        #expect(try await counts(store) == (total, Int64(total)))
        try await store.close()
    }

    @Test func readsSeeTheTailAndTheIndexAsOneNewestFirstList() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        for event in 1...3 { try await store.database.write { db in try SQLiteStore.commit([outcome(event)], in: db) } }
        // Rows 4-6 stay in the tail, with another user's rows and a failed delivery between them.
        try await store.database.write { db in
            try SQLiteStore.commit([outcome(4), outcome(5, user: "other"), outcome(6, outcome: "drop-token"), outcome(7)], in: db)
        }
        #expect(try await counts(store) == (3, 3))
        let first = try await store.history(pipeline: "p", user: "u", limit: 2, before: nil)
        #expect(first.map(\.record) == [["n": 7], ["n": 4]])
        // A page that starts in the tail and ends in the index.
        let second = try await store.history(pipeline: "p", user: "u", limit: 2, before: first.last?.id)
        #expect(second.map(\.record) == [["n": 3], ["n": 2]])
        let third = try await store.history(pipeline: "p", user: "u", limit: 5, before: second.last?.id)
        #expect(third.map(\.record) == [["n": 1]])
        #expect(try await store.history(pipeline: "p", user: "other", limit: 5, before: nil).map(\.record) == [["n": 5]])
        #expect(try await store.lastDelivery(pipeline: "p", user: "u")?.eventID == "e7")
        // Once indexed, the same reads give the same answers.
        try await store.database.write { db in try SQLiteStore.indexUserDeliveries(after: 3, through: 7, in: db) }
        #expect(try await counts(store) == (7, 7))
        #expect(try await store.history(pipeline: "p", user: "u", limit: 10, before: nil).map(\.record) == [["n": 7], ["n": 4], ["n": 3], ["n": 2], ["n": 1]])
        #expect(try await store.lastDelivery(pipeline: "p", user: "u")?.eventID == "e7")
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
                    try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + query, arguments: StatementArguments(Array(repeating: 1, count: 5).prefix(query.filter { $0 == "?" }.count)))
                        .map { $0["detail"] as String }
                }
                #expect(plan.allSatisfy { $0.hasPrefix("SEARCH") }, "\(plan)")
                #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "no sort: \(plan)")
            }
        }
        try await store.close()
    }
}
