import Foundation
import GRDB
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipeSQLite

/// Deliveries go in by up to `rowsPerInsert` rows per statement: every row must arrive whole,
/// with its own values and record, in the order of the write, whatever the chunks.
@Suite struct SQLiteStoreInsertTests {
    @Test(arguments: [1, SQLiteStore.rowsPerInsert, 2 * SQLiteStore.rowsPerInsert + 5])
    func everyRowOfAWriteArrivesInOrder(count: Int) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let deliveries = (0..<count).map { index in
            DeliveryRecord(
                pipeline: "p",
                eventID: "e\(index)",
                user: "user\(index % 7)",
                tokenKind: "device",
                token: "t\(index)",
                outcome: index % 5 == 4 ? "retry-after" : "delivered",
                reason: index % 5 == 4 ? "later" : nil,
                providerID: index % 5 == 4 ? nil : "id\(index)",
                attempts: index % 3 + 1,
                createdAt: Double(index)
            )
        }
        let history = deliveries.filter { $0.outcome == "delivered" }.map {
            HistoryEntry(pipeline: "p", user: $0.user, eventID: $0.eventID, createdAt: $0.createdAt, record: ["n": .string($0.eventID)])
        }
        try await store.pipeline("p").recordOutcome(deliveries: deliveries, history: history, state: [])
        let rows = try await store.database.read { db in try Row.fetchAll(db, sql: "SELECT * FROM deliveries ORDER BY id") }
        #expect(rows.count == count)
        for (row, delivery) in zip(rows, deliveries) {
            #expect(row["event_id"] as String == delivery.eventID)
            #expect(row["user_id"] as String == delivery.user)
            #expect(row["token"] as String == delivery.token)
            #expect(row["outcome"] as String == delivery.outcome)
            #expect(row["reason"] as String? == delivery.reason)
            #expect(row["provider_id"] as String? == delivery.providerID)
            #expect(row["attempts"] as Int == delivery.attempts)
            #expect(row["created_at"] as Double == delivery.createdAt)
            #expect(row["record"] as String? == (delivery.outcome == "delivered" ? #"{"n":"\#(delivery.eventID)"}"# : nil))
        }
        try await store.close()
    }
}
