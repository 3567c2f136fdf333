import GRDB
import PushPipeCore

/// Pruning by age and by count per user, in small transactions: SQLite has one writer, and
/// a delivery's outcome waits behind whatever transaction holds it.
extension SQLiteStore {
    /// Rows one user loses at most per pass; the next pass goes on.
    static var pruneRowsPerUser: Int { 1000 }

    static func delete(_ rows: [(id: Int64, user: String)], pipeline: String, in db: Database) throws {
        for (id, user) in rows {
            try db.cachedStatement(sql: "DELETE FROM deliveries WHERE id = ?").execute(arguments: [id])
            try db.cachedStatement(sql: "DELETE FROM user_deliveries WHERE pipeline = ? AND user_id = ? AND id = ?").execute(arguments: [
                pipeline, user, id,
            ])
        }
    }

    /// The last row created before `cutoff`, by binary search over row ids (rows are written
    /// in time order): the age scan stops there instead of reading the whole table when
    /// nothing is old enough. 0 when no row is.
    static func lastRow(createdBefore cutoff: Double, of table: RowsInTimeOrder = .deliveries, in db: Database) throws -> Int64 {
        let firstFrom = try db.cachedStatement(sql: "SELECT rowid AS id, created_at FROM \(table.rawValue) WHERE rowid >= ? ORDER BY rowid LIMIT 1")
        var low: Int64 = 0
        var high = try Int64.fetchOne(db.cachedStatement(sql: "SELECT max(rowid) FROM \(table.rawValue)")) ?? 0
        while low < high {
            let middle = low + (high - low + 1) / 2
            if let row = try Row.fetchOne(firstFrom, arguments: [middle]), (row["created_at"] as Double) < cutoff, (row["id"] as Int64) <= high {
                low = row["id"]
            } else {
                high = middle - 1
            }
        }
        return low
    }
}

/// Tables whose rows are inserted in the order of their `created_at`: pruned by age up to a
/// row found by binary search, without an index on the time.
enum RowsInTimeOrder: String {
    case deliveries
    case eventRecords = "event_records"
}

extension SQLitePipelineStore {
    func pruneDeliveries(createdBefore cutoff: Double, limit: Int) async throws -> Int {
        try await store.database.write { db in
            let boundary = try SQLiteStore.lastRow(createdBefore: cutoff, in: db)
            guard boundary > 0 else { return 0 }
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT id, user_id FROM deliveries WHERE id <= ? AND pipeline = ? AND created_at < ? ORDER BY id LIMIT ?
                        """
                ),
                arguments: [boundary, pipeline, cutoff, limit]
            )
            try SQLiteStore.delete(rows.map { ($0["id"], $0["user_id"]) }, pipeline: pipeline, in: db)
            return rows.count
        }
    }

    func pruneDeliveries(
        keepingPerUser keep: Int,
        usersAfter after: String?,
        users: Int
    ) async throws
        -> (deleted: Int, lastUser: String?)
    {
        try await store.database.write { db in
            // Counted in the index: rows still waiting in the tail would be kept beyond `keep`.
            try SQLiteStore.indexUserDeliveries(in: db)
            var user = after ?? ""
            var deleted = 0
            for _ in 0..<users {
                guard
                    let next = try String.fetchOne(
                        db.cachedStatement(
                            sql: """
                                SELECT user_id FROM user_deliveries WHERE pipeline = ? AND user_id > ? ORDER BY user_id LIMIT 1
                                """
                        ),
                        arguments: [pipeline, user]
                    )
                else { return (deleted, nil) }
                user = next
                // The newest row beyond the ones kept.
                guard
                    let newestPruned = try Int64.fetchOne(
                        db.cachedStatement(
                            sql: """
                                SELECT id FROM user_deliveries WHERE pipeline = ? AND user_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?
                                """
                        ),
                        arguments: [pipeline, user, keep]
                    )
                else { continue }
                let ids = try Int64.fetchAll(
                    db.cachedStatement(
                        sql: """
                            SELECT id FROM user_deliveries WHERE pipeline = ? AND user_id = ? AND id <= ? ORDER BY id LIMIT ?
                            """
                    ),
                    arguments: [pipeline, user, newestPruned, SQLiteStore.pruneRowsPerUser]
                )
                try SQLiteStore.delete(ids.map { ($0, user) }, pipeline: pipeline, in: db)
                deleted += ids.count
            }
            return (deleted, user)
        }
    }
}
