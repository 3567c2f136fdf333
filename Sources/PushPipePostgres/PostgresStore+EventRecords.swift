import Foundation
import PostgresNIO
import PushPipeCore

extension PostgresStore {
    /// The queue first, then the records (two statements, two snapshots): an event leaves its
    /// queue in the commit of its record or after it, so one of them is always seen. The other
    /// way round, a record committed between the reads with the removal was in neither.
    public func eventRecords(eventID: String, pipeline: String?) async throws -> (records: [EventRecord], queued: [QueuedEvent]) {
        let queued = try await queuedEvents(eventID: eventID, pipeline: pipeline)
        let records = try await connections.rows(
            """
            SELECT pipeline, event_id, state, updated_at, record FROM event_records
            WHERE event_id = \(eventID) AND (\(pipeline)::text IS NULL OR pipeline = \(pipeline))
            """
        )
        return (try Self.eventRecords(records), queued)
    }

    public func deadLetters(pipeline: String?, since: Double?, limit: Int) async throws -> [EventRecord] {
        try Self.eventRecords(
            try await connections.rows(
                """
                SELECT pipeline, event_id, state, updated_at, record FROM event_records
                WHERE state = 'dead_letter' AND updated_at >= \(since ?? 0) AND (\(pipeline)::text IS NULL OR pipeline = \(pipeline))
                ORDER BY updated_at DESC LIMIT \(limit)
                """
            )
        )
    }

    public func deadLetterCounts() async throws -> [String: Int] {
        let rows = try await connections.rows("SELECT pipeline, count(*) FROM event_records WHERE state = 'dead_letter' GROUP BY pipeline")
        return Dictionary(uniqueKeysWithValues: try rows.decode((String, Int).self).map { ($0.0, $0.1) })
    }

    public func replayDeadLetter(_ replay: QueuedEvent) async throws -> Bool {
        try await connections.transaction { [logger] connection in
            let marked = try await connection.query(
                """
                UPDATE event_records SET state = 'accepted', updated_at = \(Date().timeIntervalSince1970)
                WHERE pipeline = \(replay.pipeline) AND event_id = \(replay.eventID) AND state = 'dead_letter' RETURNING event_id
                """,
                logger: logger
            ).collect()
            guard !marked.isEmpty else { return false }
            try await PostgresWorkQueue.insert(
                [replay.work],
                pipeline: replay.pipeline,
                after: [replay.lease],
                heldBy: [replay.instance],
                on: connection,
                logger: logger
            )
            return true
        }
    }

    private static func eventRecords(_ rows: [PostgresRow]) throws -> [EventRecord] {
        try rows.decode((String, String, String, Double, String).self).map { row in
            try EventRecord(pipeline: row.0, eventID: row.1, state: row.2, updatedAt: row.3, stored: try JSON.parse(row.4))
        }
    }
}

extension PostgresPipelineStore {
    func dropDeadLetter(eventID: String) async throws -> Bool {
        try await !store.connections.rows(
            """
            DELETE FROM event_records WHERE pipeline = \(pipeline) AND event_id = \(eventID) AND state = 'dead_letter' RETURNING event_id
            """
        ).isEmpty
    }

    func pruneEventRecords(unchangedSince cutoff: Double, limit: Int) async throws -> Int {
        try await store.connections.rows(
            """
            DELETE FROM event_records WHERE ctid IN (
                SELECT ctid FROM event_records WHERE created_at < \(cutoff) AND pipeline = \(pipeline) AND updated_at < \(cutoff)
                AND state <> 'dead_letter' LIMIT \(limit))
            RETURNING event_id
            """
        ).count
    }
}
