import Foundation
import PostgresNIO
import PushPipeCore

extension PostgresStore {
    /// One claim at a time per pipeline (a transaction's advisory lock), so each takes whole
    /// batches: two claims at once (`SKIP LOCKED`) could each get part of one. Leases are on the
    /// database's clock.
    public func claimWebhookOutcomes(pipeline: String, limit: Int, lease: Double) async throws -> [WebhookOutcome] {
        try await connections.transaction { [logger] connection in
            try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\("pushpipe.webhook_outbox/" + pipeline), 0))",
                                       logger: logger)
            let chosen = try await connection.query("""
                SELECT id, target, outcome_id, batch FROM webhook_outbox WHERE pipeline = \(pipeline)
                AND next_at <= \(unescaped: Self.databaseNow) AND lease_until < \(unescaped: Self.databaseNow) ORDER BY next_at, id LIMIT \(limit)
                """, logger: logger).collect().decode((Int64, String, String, String?).self)
            var batches = Set(chosen.compactMap(\.3))
            let fresh = chosen.filter { $0.3 == nil }.map { row in
                WebhookOutcome(id: row.0, pipeline: pipeline, target: row.1, outcomeID: row.2, payload: .null, createdAt: 0)
            }
            for (batch, ids) in WebhookOutcome.batches(fresh) {
                try await connection.query("UPDATE webhook_outbox SET batch = \(batch) WHERE id = ANY(\(ids))", logger: logger)
                batches.insert(batch)
            }
            let rows = try await connection.query("""
                UPDATE webhook_outbox SET lease_until = \(unescaped: Self.databaseNow) + \(lease)
                WHERE pipeline = \(pipeline) AND batch = ANY(\(Array(batches))) AND lease_until < \(unescaped: Self.databaseNow)
                RETURNING id, target, outcome_id, payload, attempts, created_at, batch
                """, logger: logger).collect()
            let decoded: [(Int64, String, String, String, Int, Double, String)] = try rows.decode((Int64, String, String, String, Int, Double, String).self)
            return try decoded.map { row in
                WebhookOutcome(id: row.0, pipeline: pipeline, target: row.1, outcomeID: row.2, payload: try JSON.parse(row.3), attempts: row.4,
                               createdAt: row.5, batch: row.6)
            }.sorted { $0.id < $1.id }
        }
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
