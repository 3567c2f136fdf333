import Foundation
import GRDB
import PushPipeCore

extension SQLiteStore {
    /// A record replaces the event's earlier one (processing, then its outcome; a replay's
    /// outcome); its `created_at` stays, so rows stay in the order of their events.
    static func upsert(_ record: EventRecord, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO event_records (pipeline, event_id, state, created_at, updated_at, record) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (pipeline, event_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at, record = excluded.record
            """).executeBinding { values in
                values.bind(record.pipeline, at: 1)
                values.bind(record.eventID, at: 2)
                values.bind(record.state.rawValue, at: 3)
                values.bind(record.updatedAt, at: 4)
                values.bind(record.updatedAt, at: 5)
                values.bindText(record.storedText, at: 6)
            }
    }

    public func eventRecords(eventID: String, pipeline: String?) async throws -> (records: [EventRecord], queued: [QueuedEvent]) {
        try await read { db in
            let records = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT pipeline, event_id, state, updated_at, record FROM event_records WHERE event_id = ? AND (? IS NULL OR pipeline = ?)
                """), arguments: [eventID, pipeline, pipeline]).map(Self.eventRecord)
            let queued = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT pipeline, source, instance, event_id, user_id, time, body, caller, replay_of FROM queued_events
                WHERE event_id = ? AND (? IS NULL OR pipeline = ?) ORDER BY id
                """), arguments: [eventID, pipeline, pipeline]).map { row in
                try Self.queuedEvent(row, pipeline: row["pipeline"], source: row["source"], instance: row["instance"], lease: 0)
            }
            return (records, queued)
        }
    }

    public func deadLetters(pipeline: String?, since: Double?, limit: Int) async throws -> [EventRecord] {
        try await read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT pipeline, event_id, state, updated_at, record FROM event_records
                WHERE state = 'dead_letter' AND updated_at >= ? AND (? IS NULL OR pipeline = ?) ORDER BY updated_at DESC LIMIT ?
                """), arguments: [since ?? 0, pipeline, pipeline, limit]).map(Self.eventRecord)
        }
    }

    public func deadLetterCounts() async throws -> [String: Int] {
        try await read { db in
            let rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT pipeline, count(*) AS count FROM event_records WHERE state = 'dead_letter' GROUP BY pipeline
                """))
            return Dictionary(uniqueKeysWithValues: rows.map { ($0["pipeline"] as String, $0["count"] as Int) })
        }
    }

    public func replayDeadLetter(_ replay: QueuedEvent) async throws -> Bool {
        try await database.write { db in
            try db.execute(sql: """
                UPDATE event_records SET state = 'accepted', updated_at = ? WHERE pipeline = ? AND event_id = ? AND state = 'dead_letter'
                """, arguments: [Date().timeIntervalSince1970, replay.pipeline, replay.eventID])
            guard db.changesCount > 0 else { return false }
            try Self.insertQueued(replay, in: db)
            return true
        }
    }

    public func dropDeadLetter(pipeline: String, eventID: String) async throws -> Bool {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM event_records WHERE pipeline = ? AND event_id = ? AND state = 'dead_letter'", arguments: [pipeline, eventID])
            return db.changesCount > 0
        }
    }

    public func pruneEventRecords(pipeline: String, unchangedSince cutoff: Double, limit: Int) async throws -> Int {
        try await database.write { db in
            let boundary = try Self.lastRow(createdBefore: cutoff, of: .eventRecords, in: db)
            guard boundary > 0 else { return 0 }
            try db.cachedStatement(sql: """
                DELETE FROM event_records WHERE rowid IN (
                    SELECT rowid FROM event_records WHERE rowid <= ? AND pipeline = ? AND updated_at < ? AND state <> 'dead_letter' ORDER BY rowid LIMIT ?)
                """).execute(arguments: [boundary, pipeline, cutoff, limit])
            return db.changesCount
        }
    }

    static func eventRecord(_ row: Row) throws -> EventRecord {
        try EventRecord(pipeline: row["pipeline"], eventID: row["event_id"], state: row["state"], updatedAt: row["updated_at"],
                        stored: try JSON.parse(row["record"] as String))
    }
}
