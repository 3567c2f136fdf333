import Foundation
import PostgresNIO

extension PostgresStore {
    public func history(pipeline: String, user: String, limit: Int, before: Int64?) async throws -> [HistoryEntry] {
        let rows = try await client.query("""
            SELECT id, event_id, created_at, record FROM deliveries
            WHERE pipeline = \(pipeline) AND user_id = \(user) AND id < \(before ?? Int64.max) AND record IS NOT NULL
            ORDER BY id DESC LIMIT \(limit)
            """, logger: logger)
        var entries: [HistoryEntry] = []
        for try await (id, eventID, createdAt, record) in rows.decode((Int64, String, Double, String).self) {
            entries.append(HistoryEntry(id: id, pipeline: pipeline, user: user, eventID: eventID, createdAt: createdAt, record: try JSON.parse(record)))
        }
        return entries
    }

    public func lastDelivery(pipeline: String, user: String) async throws -> DeliveryRecord? {
        let rows = try await client.query("""
            SELECT event_id, token_kind, token, outcome, reason, provider_id, attempts, created_at FROM deliveries
            WHERE pipeline = \(pipeline) AND user_id = \(user) AND outcome = 'delivered' ORDER BY id DESC LIMIT 1
            """, logger: logger)
        for try await (eventID, kind, token, outcome, reason, providerID, attempts, createdAt)
            in rows.decode((String, String, String, String, String?, String?, Int64, Double).self) {
            return DeliveryRecord(pipeline: pipeline, eventID: eventID, user: user, tokenKind: kind, token: token, outcome: outcome, reason: reason,
                                  providerID: providerID, attempts: Int(attempts), createdAt: createdAt)
        }
        return nil
    }

    public func claimQueuedEvents(pipeline: String, source: String, lease: Double, limit: Int) async throws -> [QueuedEvent] {
        let instance = QueuedEvent.thisProcess
        // SKIP LOCKED: daemons claiming at the same moment split the rows instead of waiting. The
        // rows are chosen once, in a materialized CTE (see `claimDueChecks`). Leases are in the
        // database's clock, the one clock every daemon shares.
        let rows = try await client.query("""
            WITH lapsed AS MATERIALIZED (
                SELECT id FROM queued_events WHERE pipeline = \(pipeline) AND source = \(source)
                AND lease_until < \(unescaped: Self.databaseNow) ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            UPDATE queued_events AS queued SET instance = \(instance), lease_until = \(unescaped: Self.databaseNow) + \(lease)
            FROM lapsed WHERE queued.id = lapsed.id
            RETURNING queued.id, queued.event_id, queued.user_id, queued.time, queued.body
            """, logger: logger)
        var claimed: [(Int64, QueuedEvent)] = []
        for try await (id, eventID, user, time, body) in rows.decode((Int64, String, String?, Double, String).self) {
            claimed.append((id, QueuedEvent(pipeline: pipeline, source: source, instance: instance, eventID: eventID, user: user, time: time,
                                            body: try JSON.parse(body), lease: lease)))
        }
        return claimed.sorted { $0.0 < $1.0 }.map(\.1)
    }

    public func renewLeases(pipeline: String, source: String, eventIDs: [String], lease: Double) async throws {
        guard !eventIDs.isEmpty else { return }
        try await client.query("""
            UPDATE queued_events SET lease_until = \(unescaped: Self.databaseNow) + \(lease)
            WHERE pipeline = \(pipeline) AND source = \(source) AND instance = \(QueuedEvent.thisProcess) AND event_id = ANY(\(eventIDs))
            """, logger: logger)
    }

    public func pruneDeliveries(pipeline: String, createdBefore cutoff: Double, limit: Int) async throws -> Int {
        try await count(client.query("""
            DELETE FROM deliveries WHERE id IN (
                SELECT id FROM deliveries WHERE pipeline = \(pipeline) AND created_at < \(cutoff) ORDER BY id LIMIT \(limit))
            RETURNING id
            """, logger: logger))
    }

    public func pruneDeliveries(pipeline: String, keepingPerUser keep: Int, usersAfter after: String?, users: Int) async throws
        -> (deleted: Int, lastUser: String?)
    {
        let page = try await strings(client.query("""
            SELECT DISTINCT user_id FROM deliveries WHERE pipeline = \(pipeline) AND user_id > \(after ?? "") ORDER BY user_id LIMIT \(users)
            """, logger: logger))
        var deleted = 0
        for user in page {
            deleted += try await count(client.query("""
                DELETE FROM deliveries WHERE id IN (
                    SELECT id FROM deliveries WHERE pipeline = \(pipeline) AND user_id = \(user) ORDER BY id DESC OFFSET \(keep) LIMIT 1000)
                RETURNING id
                """, logger: logger))
        }
        return (deleted, page.count < users ? nil : page.last)
    }

    private func count(_ rows: PostgresRowSequence) async throws -> Int {
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }
}
