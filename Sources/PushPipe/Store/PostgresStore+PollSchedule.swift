import Foundation
import PostgresNIO

extension PostgresStore {
    public func syncPollSchedule(pipeline: String, source: String, tokenKind: String, interval: Double) async throws {
        let now = Date().timeIntervalSince1970
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("""
                INSERT INTO poll_schedule (pipeline, source, user_id, due_at)
                SELECT DISTINCT pipeline, \(source), user_id, \(now) + random() * \(interval) FROM registrations
                WHERE pipeline = \(pipeline) AND token_kind = \(tokenKind)
                ON CONFLICT (pipeline, source, user_id) DO NOTHING
                """, logger: logger)
            try await connection.query("""
                DELETE FROM poll_schedule WHERE pipeline = \(pipeline) AND source = \(source)
                AND user_id NOT IN (SELECT user_id FROM registrations WHERE pipeline = \(pipeline) AND token_kind = \(tokenKind))
                """, logger: logger)
        }
    }

    public func claimDueChecks(pipeline: String, source: String, interval: Double, limit: Int) async throws -> [String] {
        let now = Date().timeIntervalSince1970
        // SKIP LOCKED: daemons claiming at the same moment split the due users between them.
        return try await strings(client.query("""
            UPDATE poll_schedule SET due_at = \(now + interval)
            WHERE pipeline = \(pipeline) AND source = \(source) AND user_id IN (
                SELECT user_id FROM poll_schedule WHERE pipeline = \(pipeline) AND source = \(source) AND due_at <= \(now)
                ORDER BY due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            RETURNING user_id
            """, logger: logger))
    }
}
