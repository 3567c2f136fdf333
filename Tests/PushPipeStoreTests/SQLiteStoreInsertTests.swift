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
            let retried = index % 5 == 4
            var row = DeliveryRow.of(
                "e\(index)",
                user: "user\(index % 7)",
                token: "t\(index)",
                outcome: retried ? .retryAfter : .delivered,
                reason: retried ? "later" : nil,
                providerID: retried ? nil : "id\(index)",
                at: Double(index),
                history: retried ? nil : ["n": .string("e\(index)")]
            )
            row.delivery.attempts = index % 3 + 1
            return row
        }
        try await store.pipeline("p").recordOutcome(deliveries: deliveries, state: [])
        let rows = try await store.database.read { db in try Row.fetchAll(db, sql: "SELECT * FROM deliveries ORDER BY id") }
        #expect(rows.count == count)
        for (row, written) in zip(rows, deliveries) {
            let delivery = written.delivery
            #expect(row["event_id"] as String == written.eventID)
            #expect(row["user_id"] as String == delivery.user)
            #expect(row["token"] as String == delivery.token)
            #expect(row["outcome"] as String == delivery.outcome.rawValue)
            #expect(row["reason"] as String? == delivery.reason)
            #expect(row["provider_id"] as String? == delivery.providerID)
            #expect(row["attempts"] as Int == delivery.attempts)
            #expect(row["created_at"] as Double == delivery.at)
            #expect(row["record"] as String? == (delivery.outcome == .delivered ? #"{"n":"\#(written.eventID)"}"# : nil))
        }
        try await store.close()
    }
}
