import Foundation
import GRDB
import PushPipeCore

extension SQLiteStore {
    /// `INSERT ... VALUES (...), (...) ON CONFLICT ...` for 1 to `rowsPerInsert` records, made once.
    private static let upsertStatements: [String] = (1...rowsPerInsert).map { count in
        "INSERT INTO event_records (pipeline, event_id, state, created_at, updated_at, record) VALUES "
            + Array(repeating: "(?, ?, ?, ?, ?, ?)", count: count).joined(separator: ", ")
            + " ON CONFLICT (pipeline, event_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at, record = excluded.record"
    }

    /// Records replace the events' earlier ones (processing, then the outcome; a replay's
    /// outcome); `created_at` stays, so rows stay in the order of their events. Several per
    /// statement, as deliveries are.
    static func upsert(_ records: [EventRecord], in db: Database) throws {
        for start in stride(from: 0, to: records.count, by: rowsPerInsert) {
            let chunk = records[start..<min(records.count, start + rowsPerInsert)]
            try db.cachedStatement(sql: upsertStatements[chunk.count - 1]).executeBinding(scratchBytes: chunk.count * 512) { values in
                for (position, record) in chunk.enumerated() {
                    let first = Int32(position * 6)
                    values.bind(record.pipeline, at: first + 1)
                    values.bind(record.eventID, at: first + 2)
                    values.bind(record.state.rawValue, at: first + 3)
                    values.bind(record.updatedAt, at: first + 4)
                    values.bind(record.updatedAt, at: first + 5)
                    values.bindText(record.storedText, at: first + 6)
                }
            }
        }
    }

    public func eventRecords(eventID: String, pipeline: String?) async throws -> (records: [EventRecord], queued: [QueuedEvent]) {
        try await read { db in
            let records = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT pipeline, event_id, state, updated_at, record FROM event_records WHERE event_id = ? AND (? IS NULL OR pipeline = ?)
                        """
                ),
                arguments: [eventID, pipeline, pipeline]
            ).map(Self.eventRecord)
            return (records, try Self.queuedEvents(eventID: eventID, pipeline: pipeline, in: db))
        }
    }

    public func deadLetters(pipeline: String?, since: Double?, limit: Int) async throws -> [EventRecord] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT pipeline, event_id, state, updated_at, record FROM event_records
                        WHERE state = 'dead_letter' AND updated_at >= ? AND (? IS NULL OR pipeline = ?) ORDER BY updated_at DESC LIMIT ?
                        """
                ),
                arguments: [since ?? 0, pipeline, pipeline, limit]
            ).map(Self.eventRecord)
        }
    }

    public func deadLetterCounts() async throws -> [String: Int] {
        try await read { db in
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT pipeline, count(*) AS count FROM event_records WHERE state = 'dead_letter' GROUP BY pipeline
                        """
                )
            )
            return Dictionary(uniqueKeysWithValues: rows.map { ($0["pipeline"] as String, $0["count"] as Int) })
        }
    }

    public func replayDeadLetter(_ replay: QueuedEvent) async throws -> Bool {
        let now = clock.now
        return try await database.write { db in
            try db.execute(
                sql: """
                    UPDATE event_records SET state = 'accepted', updated_at = ? WHERE pipeline = ? AND event_id = ? AND state = 'dead_letter'
                    """,
                arguments: [now, replay.pipeline, replay.eventID]
            )
            guard db.changesCount > 0 else { return false }
            try SQLiteWorkQueue.insert(replay.work, pipeline: replay.pipeline, dueAt: now + replay.lease.inSeconds, heldBy: replay.instance, in: db)
            return true
        }
    }

    static func eventRecord(_ row: Row) throws -> EventRecord {
        try EventRecord(
            pipeline: row["pipeline"],
            eventID: row["event_id"],
            state: row["state"],
            updatedAt: row["updated_at"],
            stored: try JSON.parse(row["record"] as String)
        )
    }
}

extension SQLitePipelineStore {
    func dropDeadLetter(eventID: String) async throws -> Bool {
        try await store.database.write { db in
            try db.execute(
                sql: "DELETE FROM event_records WHERE pipeline = ? AND event_id = ? AND state = 'dead_letter'",
                arguments: [pipeline, eventID]
            )
            return db.changesCount > 0
        }
    }

    func pruneEventRecords(unchangedSince cutoff: Double, limit: Int) async throws -> Int {
        try await store.database.write { db in
            let boundary = try SQLiteStore.lastRow(createdBefore: cutoff, of: .eventRecords, in: db)
            guard boundary > 0 else { return 0 }
            try db.cachedStatement(
                sql: """
                    DELETE FROM event_records WHERE rowid IN (
                        SELECT rowid FROM event_records WHERE rowid <= ? AND pipeline = ? AND updated_at < ? AND state <> 'dead_letter' ORDER BY rowid
                        LIMIT ?)
                    """
            ).execute(arguments: [boundary, pipeline, cutoff, limit])
            return db.changesCount
        }
    }
}
