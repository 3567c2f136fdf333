import Foundation
import PostgresNIO
import PushPipeCore

extension PostgresStore {
    /// New users fall due evenly over the interval in the order of their ids, as in the SQLite
    /// store (where that order keeps a claim's writes on neighbouring pages). ON CONFLICT: another
    /// daemon may schedule the same user between the NOT EXISTS and the insert.
    ///
    /// Both statements read every registration and every scheduled user: one daemon runs them
    /// per `min(interval, 60 s)`, however many share the database (the others find the sync
    /// done and skip it).
    public func syncPollSchedule(pipeline: String, source: String, tokenKind: String, interval: Double) async throws {
        let spacing = min(interval, 60) * 0.9
        try await connections.transaction { [logger] connection in
            let due = try await connection.query("""
                INSERT INTO poll_syncs AS sync (pipeline, source, synced_at) VALUES (\(pipeline), \(source), \(unescaped: Self.databaseNow))
                ON CONFLICT (pipeline, source) DO UPDATE SET synced_at = excluded.synced_at WHERE sync.synced_at < excluded.synced_at - \(spacing)
                RETURNING synced_at
                """, logger: logger).collect()
            guard !due.isEmpty else { return }
            try await connection.query("""
                INSERT INTO poll_schedule (pipeline, source, user_id, due_at)
                SELECT \(pipeline), \(source), user_id, \(unescaped: Self.databaseNow) + (row_number() OVER (ORDER BY user_id) - 1) * \(interval * 0.8) / count(*) OVER () FROM (
                    SELECT DISTINCT r.user_id FROM registrations AS r WHERE r.pipeline = \(pipeline) AND r.token_kind = \(tokenKind)
                    AND NOT EXISTS (SELECT 1 FROM poll_schedule AS s WHERE s.pipeline = \(pipeline) AND s.source = \(source) AND s.user_id = r.user_id)) AS unscheduled
                ON CONFLICT (pipeline, source, user_id) DO NOTHING
                """, logger: logger)
            try await connection.query("""
                DELETE FROM poll_schedule AS schedule WHERE schedule.pipeline = \(pipeline) AND schedule.source = \(source)
                AND NOT EXISTS (SELECT 1 FROM registrations AS r WHERE r.pipeline = \(pipeline) AND r.token_kind = \(tokenKind)
                                AND r.user_id = schedule.user_id)
                """, logger: logger)
        }
    }

    public func hold(keys: Set<String>, pipeline: String, stage: String, lease: Double) async throws -> Set<String> {
        let work = self.work(pipeline: pipeline)
        return try await work.take(PostgresWorkQueue.holdKind(stage: stage), keys: keys, lease: lease)
    }

    public func release(keys: Set<String>, pipeline: String, stage: String) async throws {
        try await work(pipeline: pipeline).untake(PostgresWorkQueue.holdKind(stage: stage), keys: keys)
    }

    public func renewHolds(keys: Set<String>, pipeline: String, stage: String, lease: Double) async throws {
        try await work(pipeline: pipeline).renew(PostgresWorkQueue.holdKind(stage: stage), keys: keys, lease: lease)
    }

    public func pruneStates(pipeline: String, stage: String, unchangedSince cutoff: Double, limit: Int) async throws -> Int {
        try await connections.rows("""
            DELETE FROM stage_state WHERE pipeline = \(pipeline) AND stage = \(stage) AND key IN (
                SELECT key FROM stage_state WHERE pipeline = \(pipeline) AND stage = \(stage) AND updated_at < \(cutoff) LIMIT \(limit))
            RETURNING key
            """).count
    }

    public func pruneLapsedHolds(pipeline: String) async throws -> Int {
        try await work(pipeline: pipeline).forgetLapsedTakes(kindsStartingWith: PostgresWorkQueue.holdKinds)
    }

    public func claimDueChecks(pipeline: String, source: String, interval: Double, limit: Int) async throws -> [String] {
        // SKIP LOCKED: daemons claiming at the same moment split the due users between them.
        // The due users are chosen once, in a materialized CTE: as `IN (SELECT … LIMIT)` the
        // planner may run the subquery again, and a claim took every due user whatever the limit.
        // An UPDATE returns rows in no particular order: sorted after it, as they fell due.
        return try await strings(connections.rows("""
            WITH due AS MATERIALIZED (
                SELECT user_id, due_at FROM poll_schedule WHERE pipeline = \(pipeline) AND source = \(source) AND due_at <= \(unescaped: Self.databaseNow)
                ORDER BY due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED),
            claimed AS (
                UPDATE poll_schedule AS schedule SET due_at = \(unescaped: Self.databaseNow) + \(interval) FROM due
                WHERE schedule.pipeline = \(pipeline) AND schedule.source = \(source) AND schedule.user_id = due.user_id
                RETURNING schedule.user_id, due.due_at)
            SELECT user_id FROM claimed ORDER BY due_at
            """))
    }
}
