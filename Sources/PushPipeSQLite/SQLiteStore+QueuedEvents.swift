import Foundation
import GRDB
import PushPipeCore

extension SQLiteStore {
    public func enqueue(_ event: QueuedEvent) async throws {
        try await outcomes.submit(.enqueue(event))
    }

    public func dequeue(pipeline: String, eventID: String) async throws {
        try await outcomes.submit(.dequeue(pipeline: pipeline, eventID: eventID))
    }

    public func claimQueuedEvents(pipeline: String, source: String, lease: Double, limit: Int) async throws -> [QueuedEvent] {
        let instance = QueuedEvent.thisProcess
        let now = clock.now
        let rows = try await database.write { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT id, event_id, user_id, time, body, caller, replay_of, trace_parent FROM queued_events
                WHERE pipeline = ? AND source = ? AND (instance <> ? OR lease_until < ?) ORDER BY id LIMIT ?
                """, arguments: [pipeline, source, instance, now, limit])
            for row in rows {
                try db.execute(sql: "UPDATE queued_events SET instance = ?, lease_until = ? WHERE id = ?",
                               arguments: [instance, now + lease, row["id"] as Int64])
            }
            return rows
        }
        return try rows.map { row in try Self.queuedEvent(row, pipeline: pipeline, source: source, instance: instance, lease: lease) }
    }

    public func renewLeases(pipeline: String, source: String, eventIDs: [String], lease: Double) async throws {
        guard !eventIDs.isEmpty else { return }
        let until = clock.now + lease
        try await database.write { db in
            let statement = try db.cachedStatement(sql: """
                UPDATE queued_events SET lease_until = ? WHERE pipeline = ? AND source = ? AND instance = ? AND event_id = ?
                """)
            for id in eventIDs { try statement.execute(arguments: [until, pipeline, source, QueuedEvent.thisProcess, id]) }
        }
    }

    public func queuedEventCounts() async throws -> [QueuedEventCount] {
        try await database.read { db in
            try Row.fetchAll(db, sql: "SELECT pipeline, source, count(*) AS count FROM queued_events GROUP BY pipeline, source ORDER BY pipeline, source")
                .map { QueuedEventCount(pipeline: $0["pipeline"], source: $0["source"], count: $0["count"]) }
        }
    }

    /// Moves what a claim here would take (another process's events, or this one's whose lease
    /// ran out): this process keeps what it holds under the old key, as a claim leaves it.
    public func renameSource(pipeline: String, from: String, to: String, lease: Double) async throws -> Int {
        let now = clock.now
        return try await database.write { db in
            try db.execute(sql: "UPDATE queued_events SET source = ? WHERE pipeline = ? AND source = ? AND (instance <> ? OR lease_until < ?)",
                           arguments: [to, pipeline, from, QueuedEvent.thisProcess, now])
            let moved = db.changesCount
            // A user already scheduled under the new key keeps that schedule.
            let (old, new) = (WorkItem.pollKind(source: from), WorkItem.pollKind(source: to))
            try db.execute(sql: "UPDATE OR IGNORE work SET kind = ? WHERE pipeline = ? AND kind = ?", arguments: [new, pipeline, old])
            try db.execute(sql: "DELETE FROM work WHERE pipeline = ? AND (kind = ? OR kind = ? AND key = ?)",
                           arguments: [pipeline, old, WorkItem.scheduleSyncs, old])
            return moved
        }
    }

    static func insertQueued(_ event: QueuedEvent, at now: Double, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO queued_events (pipeline, source, instance, event_id, user_id, time, body, lease_until, caller, replay_of, trace_parent)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: .storable([event.pipeline, event.source, event.instance, event.eventID, event.user, event.time,
                                               event.body.compactText, now + event.lease, event.caller,
                                               event.replayOf.map(QueuedEvent.storedReplay), event.traceParent]))
    }

    static func queuedEvent(_ row: Row, pipeline: String, source: String, instance: String, lease: Double) throws -> QueuedEvent {
        var event = QueuedEvent(pipeline: pipeline, source: source, instance: instance, eventID: row["event_id"], user: row["user_id"],
                                time: row["time"], body: try JSON.parse(row["body"] as String), lease: lease)
        event.caller = row["caller"]
        event.traceParent = row["trace_parent"]
        event.replayOf = try (row["replay_of"] as String?).map { try QueuedEvent.replay(stored: $0, pipeline: pipeline, eventID: event.eventID) }
        return event
    }

    static func deleteQueued(pipeline: String, eventID: String, in db: Database) throws {
        // One row: a backend that reuses an event id (against `id_field`'s rule) keeps its other events queued.
        try db.cachedStatement(sql: """
            DELETE FROM queued_events WHERE id = (SELECT id FROM queued_events WHERE pipeline = ? AND event_id = ? ORDER BY id LIMIT 1)
            """).execute(arguments: .storable([pipeline, eventID]))
    }
}
