import Foundation
import Logging
import PostgresNIO
import PushPipeCore

extension PostgresStore {
    public func history(pipeline: String, user: String, limit: Int, before: Int64?) async throws -> [HistoryEntry] {
        let rows = try await connections.rows("""
            SELECT id, event_id, created_at, record FROM deliveries
            WHERE pipeline = \(pipeline) AND user_id = \(user) AND id < \(before ?? Int64.max) AND record IS NOT NULL
            ORDER BY id DESC LIMIT \(limit)
            """)
        var entries: [HistoryEntry] = []
        for (id, eventID, createdAt, record) in try rows.decode((Int64, String, Double, String).self) {
            entries.append(HistoryEntry(id: id, pipeline: pipeline, user: user, eventID: eventID, createdAt: createdAt, record: try JSON.parse(record)))
        }
        return entries
    }

    public func lastDelivery(pipeline: String, user: String) async throws -> DeliveryRecord? {
        let rows = try await connections.rows("""
            SELECT event_id, token_kind, token, outcome, reason, provider_id, attempts, created_at FROM deliveries
            WHERE pipeline = \(pipeline) AND user_id = \(user) AND outcome = 'delivered' ORDER BY id DESC LIMIT 1
            """)
        for (eventID, kind, token, outcome, reason, providerID, attempts, createdAt)
            in try rows.decode((String, String, String, String, String?, String?, Int64, Double).self) {
            return DeliveryRecord(pipeline: pipeline, eventID: eventID, user: user, tokenKind: kind, token: token, outcome: outcome, reason: reason,
                                  providerID: providerID, attempts: Int(attempts), createdAt: createdAt)
        }
        return nil
    }

    /// The longest claims wait after a gap in renewals: a pool reconnects at least once a
    /// minute (PostgresNIO's longest backoff), and its daemon renews within a third of a lease.
    static let longestResumeGrace = 90.0

    public func pruneDeliveries(pipeline: String, createdBefore cutoff: Double, limit: Int) async throws -> Int {
        try await count(connections.rows("""
            DELETE FROM deliveries WHERE id IN (
                SELECT id FROM deliveries WHERE pipeline = \(pipeline) AND created_at < \(cutoff) ORDER BY id LIMIT \(limit))
            RETURNING id
            """))
    }

    public func pruneDeliveries(pipeline: String, keepingPerUser keep: Int, usersAfter after: String?, users: Int) async throws
        -> (deleted: Int, lastUser: String?)
    {
        let page = try await strings(connections.rows("""
            SELECT DISTINCT user_id FROM deliveries WHERE pipeline = \(pipeline) AND user_id > \(after ?? "") ORDER BY user_id LIMIT \(users)
            """))
        var deleted = 0
        for user in page {
            deleted += try await count(connections.rows("""
                DELETE FROM deliveries WHERE id IN (
                    SELECT id FROM deliveries WHERE pipeline = \(pipeline) AND user_id = \(user) ORDER BY id DESC OFFSET \(keep) LIMIT 1000)
                RETURNING id
                """))
        }
        return (deleted, page.count < users ? nil : page.last)
    }

    private func count(_ rows: [PostgresRow]) -> Int { rows.count }
}
