import Foundation
import PostgresNIO
import PushPipeCore

extension PostgresStore {
    /// Each outcome claimed by one daemon (`FOR UPDATE SKIP LOCKED`), on the database's clock.
    public func claimWebhookOutcomes(pipeline: String, limit: Int, lease: Double) async throws -> [WebhookOutcome] {
        let rows = try await connections.rows("""
            WITH due AS MATERIALIZED (
                SELECT id FROM webhook_outbox WHERE pipeline = \(pipeline) AND next_at <= \(unescaped: Self.databaseNow)
                AND lease_until < \(unescaped: Self.databaseNow) ORDER BY next_at, id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            UPDATE webhook_outbox AS outcome SET lease_until = \(unescaped: Self.databaseNow) + \(lease)
            FROM due WHERE outcome.id = due.id
            RETURNING outcome.id, outcome.target, outcome.outcome_id, outcome.payload, outcome.attempts, outcome.created_at
            """)
        return try rows.decode((Int64, String, String, String, Int, Double).self).map { row in
            WebhookOutcome(id: row.0, pipeline: pipeline, target: row.1, outcomeID: row.2, payload: try JSON.parse(row.3), attempts: row.4,
                           createdAt: row.5)
        }.sorted { $0.id < $1.id }
    }

    public func removeWebhookOutcomes(ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        _ = try await connections.rows("DELETE FROM webhook_outbox WHERE id = ANY(\(ids))")
    }

    public func retryWebhookOutcomes(ids: [Int64], after delay: Double) async throws {
        guard !ids.isEmpty else { return }
        _ = try await connections.rows("""
            UPDATE webhook_outbox SET attempts = attempts + 1, next_at = \(unescaped: Self.databaseNow) + \(delay), lease_until = 0
            WHERE id = ANY(\(ids))
            """)
    }

    public func pruneWebhookOutcomes(pipeline: String, createdBefore cutoff: Double, limit: Int) async throws -> Int {
        try await connections.rows("""
            DELETE FROM webhook_outbox WHERE id IN (
                SELECT id FROM webhook_outbox WHERE pipeline = \(pipeline) AND created_at < \(cutoff) ORDER BY id LIMIT \(limit))
            RETURNING id
            """).count
    }
}
