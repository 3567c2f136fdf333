import Foundation
import Logging
import PostgresNIO
import PushPipeCore

extension PostgresStore {
    /// The longest claims wait after a gap in renewals: a pool reconnects at least once a
    /// minute (PostgresNIO's longest backoff), and its daemon renews within a third of a lease.
    static let longestResumeGrace: Duration = .seconds(90)
}

extension PostgresPipelineStore {
    func history(user: String, limit: Int, before: Int64?) async throws -> [HistoryEntry] {
        let rows = try await store.connections.rows(
            """
            SELECT id, event_id, created_at, record FROM deliveries
            WHERE pipeline = \(pipeline) AND user_id = \(user) AND id < \(before ?? Int64.max) AND record IS NOT NULL
            ORDER BY id DESC LIMIT \(limit)
            """
        )
        return try rows.decode((Int64, String, Double, String).self).map { id, eventID, createdAt, record in
            HistoryEntry(id: id, pipeline: pipeline, user: user, eventID: eventID, createdAt: createdAt, record: try JSON.parse(record))
        }
    }

    func lastDelivery(user: String) async throws -> DeliveryRow? {
        try await store.connections.rows(
            """
            SELECT event_id, token_kind, token, reason, provider_id, attempts, created_at FROM deliveries
            WHERE pipeline = \(pipeline) AND user_id = \(user) AND outcome = 'delivered' ORDER BY id DESC LIMIT 1
            """
        ).decode((String, String, String, String?, String?, Int64, Double).self).first.map { eventID, kind, token, reason, providerID, attempts, at in
            // The transport is the pipeline's, not a column of the row.
            let delivery = Delivery(
                user: user,
                tokenKind: kind,
                token: token,
                transport: "",
                outcome: .delivered,
                providerID: providerID,
                attempts: Int(attempts),
                reason: reason,
                at: at
            )
            return DeliveryRow(eventID: eventID, delivery: delivery)
        }
    }

    func pruneDeliveries(createdBefore cutoff: Double, limit: Int) async throws -> Int {
        try await store.connections.rows(
            """
            DELETE FROM deliveries WHERE id IN (
                SELECT id FROM deliveries WHERE pipeline = \(pipeline) AND created_at < \(cutoff) ORDER BY id LIMIT \(limit))
            RETURNING id
            """
        ).count
    }

    func pruneDeliveries(
        keepingPerUser keep: Int,
        usersAfter after: String?,
        users: Int
    ) async throws
        -> (deleted: Int, lastUser: String?)
    {
        let page = try await store.connections.rows(
            """
            SELECT DISTINCT user_id FROM deliveries WHERE pipeline = \(pipeline) AND user_id > \(after ?? "") ORDER BY user_id LIMIT \(users)
            """
        ).decode(String.self)
        var deleted = 0
        for user in page {
            deleted += try await store.connections.rows(
                """
                DELETE FROM deliveries WHERE id IN (
                    SELECT id FROM deliveries WHERE pipeline = \(pipeline) AND user_id = \(user) ORDER BY id DESC OFFSET \(keep) LIMIT 1000)
                RETURNING id
                """
            ).count
        }
        return (deleted, page.count < users ? nil : page.last)
    }
}
