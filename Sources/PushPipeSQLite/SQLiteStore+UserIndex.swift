import GRDB
import PushPipeCore

/// Deliveries are read per user (history, the last delivery), but an index entry per row
/// dirties the index page where that user's entries end: at APNs rates nearly every row of a
/// commit would write a 4 KB page of its own to the WAL, and disk writes would bound
/// throughput. So rows are indexed in sorted batches: `user_deliveries` is the
/// index, `user_index_state.indexed_through` the last row it covers, and reads find the rows
/// after it (the tail: at most a batch, `UserIndexSchedule`) by scanning the table's end.
/// A batch dirties each user's last index page once, however many of the user's rows it holds.
extension SQLiteStore {
    /// Which of a user's rows a read wants (fixed conditions, never caller text).
    enum UserRows {
        /// Rows carrying a history record.
        case history
        /// Accepted deliveries.
        case delivered

        var condition: String {
            switch self {
            case .history: "record IS NOT NULL"
            case .delivered: "outcome = 'delivered'"
            }
        }

        /// Arguments: indexed through, before, pipeline, user, limit. A range of row ids.
        var tailQuery: String {
            "SELECT * FROM deliveries WHERE id > ? AND id < ? AND pipeline = ? AND user_id = ? AND \(condition) ORDER BY id DESC LIMIT ?"
        }

        /// Arguments: pipeline, user, before, limit. Walks the user's index entries newest first.
        var indexQuery: String {
            """
            SELECT d.* FROM user_deliveries AS u JOIN deliveries AS d ON d.id = u.id
            WHERE u.pipeline = ? AND u.user_id = ? AND u.id < ? AND \(condition) ORDER BY u.id DESC LIMIT ?
            """
        }
    }

    /// Indexes whatever waits in the tail (by default whenever rows wait: before retention
    /// counts a user's rows), or when `isDue` says so for the tail's size.
    static func indexUserDeliveries(in db: Database, when isDue: (Int64) -> Bool = { $0 > 0 }) throws {
        let indexedThrough = try indexedThrough(in: db)
        let last = try Int64.fetchOne(db.cachedStatement(sql: "SELECT max(id) FROM deliveries")) ?? 0
        guard isDue(last - indexedThrough) else { return }
        try indexUserDeliveries(after: indexedThrough, through: last, in: db)
    }

    /// Moves the tail into the index, in index order so each page is written once.
    ///
    /// `OR FAIL`: ids are unique, so no entry can conflict, and a statement that is never rolled
    /// back half-way needs no statement journal. With the default `ABORT`, SQLite would copy every
    /// index page the batch touches into a temporary file first, a large share of the APNs path's
    /// disk writes.
    static func indexUserDeliveries(after indexedThrough: Int64, through last: Int64, in db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT OR FAIL INTO user_deliveries (pipeline, user_id, id)
                SELECT pipeline, user_id, id FROM deliveries WHERE id > ? AND id <= ? ORDER BY pipeline, user_id, id
                """
        ).execute(arguments: [indexedThrough, last])
        try db.cachedStatement(sql: "UPDATE user_index_state SET indexed_through = ?").execute(arguments: [last])
    }

    static func indexedThrough(in db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT indexed_through FROM user_index_state")) ?? 0
    }

    /// One user's rows, newest first, with an id below `before`: the tail's, then the index's.
    static func userRows(_ rows: UserRows, pipeline: String, user: String, before: Int64, limit: Int, in db: Database) throws -> [Row] {
        let indexedThrough = try indexedThrough(in: db)
        var found = try Row.fetchAll(db.cachedStatement(sql: rows.tailQuery), arguments: [indexedThrough, before, pipeline, user, limit])
        guard found.count < limit else { return found }
        // The index holds only rows up to `indexedThrough`: no overlap with the tail.
        found += try Row.fetchAll(db.cachedStatement(sql: rows.indexQuery), arguments: [pipeline, user, before, limit - found.count])
        return found
    }
}
