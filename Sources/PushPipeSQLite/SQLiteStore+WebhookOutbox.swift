import Foundation
import GRDB
import PushPipeCore

extension SQLiteStore {
    static func insert(_ outcome: WebhookOutcome, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO webhook_outbox (pipeline, target, outcome_id, payload, created_at, next_at) VALUES (?, ?, ?, ?, ?, ?)
            """).execute(arguments: [outcome.pipeline, outcome.target, outcome.outcomeID, outcome.payload.compactText, outcome.createdAt,
                                     Date().timeIntervalSince1970])
    }

    /// Writes are serial here, so a claim sees every batch whole: it takes the batches of the
    /// outcomes it chose, after naming the new ones.
    public func claimWebhookOutcomes(pipeline: String, limit: Int, lease: Double) async throws -> [WebhookOutcome] {
        let now = Date().timeIntervalSince1970
        return try await database.write { db in
            let chosen = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT id, target, outcome_id, batch FROM webhook_outbox
                WHERE pipeline = ? AND next_at <= ? AND lease_until < ? ORDER BY next_at, id LIMIT ?
                """), arguments: [pipeline, now, now, limit])
            var batches = Set(chosen.compactMap { $0["batch"] as String? })
            let fresh = chosen.filter { ($0["batch"] as String?) == nil }.map { row in
                WebhookOutcome(id: row["id"], pipeline: pipeline, target: row["target"], outcomeID: row["outcome_id"], payload: .null, createdAt: 0)
            }
            let name = try db.cachedStatement(sql: "UPDATE webhook_outbox SET batch = ? WHERE id = ?")
            for (batch, ids) in WebhookOutcome.batches(fresh) {
                for id in ids { try name.execute(arguments: [batch, id]) }
                batches.insert(batch)
            }
            let members = try db.cachedStatement(sql: """
                SELECT id, target, outcome_id, payload, attempts, created_at FROM webhook_outbox
                WHERE pipeline = ? AND batch = ? AND lease_until < ? ORDER BY id
                """)
            let claim = try db.cachedStatement(sql: "UPDATE webhook_outbox SET lease_until = ? WHERE id = ?")
            var claimed: [WebhookOutcome] = []
            for batch in batches {
                for row in try Row.fetchAll(members, arguments: [pipeline, batch, now]) {
                    try claim.execute(arguments: [now + lease, row["id"] as Int64])
                    claimed.append(WebhookOutcome(id: row["id"], pipeline: pipeline, target: row["target"], outcomeID: row["outcome_id"],
                                                  payload: try JSON.parse(row["payload"] as String), attempts: row["attempts"],
                                                  createdAt: row["created_at"], batch: batch))
                }
            }
            return claimed.sorted { $0.id < $1.id }
        }
    }

    public func removeWebhookOutcomes(ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        try await database.write { db in
            let statement = try db.cachedStatement(sql: "DELETE FROM webhook_outbox WHERE id = ?")
            for id in ids { try statement.execute(arguments: [id]) }
        }
    }

    public func retryWebhookOutcomes(ids: [Int64], after delay: Double) async throws {
        guard !ids.isEmpty else { return }
        let next = Date().timeIntervalSince1970 + delay
        try await database.write { db in
            let statement = try db.cachedStatement(sql: "UPDATE webhook_outbox SET attempts = attempts + 1, next_at = ?, lease_until = 0 WHERE id = ?")
            for id in ids { try statement.execute(arguments: [next, id]) }
        }
    }

    public func pruneWebhookOutcomes(pipeline: String, createdBefore cutoff: Double, limit: Int) async throws -> Int {
        try await database.write { db in
            try db.execute(sql: """
                DELETE FROM webhook_outbox WHERE id IN (
                    SELECT id FROM webhook_outbox WHERE pipeline = ? AND created_at < ? ORDER BY id LIMIT ?)
                """, arguments: [pipeline, cutoff, limit])
            return db.changesCount
        }
    }
}
