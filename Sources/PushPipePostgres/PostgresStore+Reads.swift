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

    public func queuedEventCounts() async throws -> [QueuedEventCount] {
        try await connections.rows("SELECT pipeline, source, count(*) FROM queued_events GROUP BY pipeline, source ORDER BY pipeline, source")
            .decode((String, String, Int).self).map { QueuedEventCount(pipeline: $0.0, source: $0.1, count: $0.2) }
    }

    /// Every daemon of a group may do it, at its start and then every lease: a row moves once,
    /// when a claim could take it (the same lapse and the same grace after a gap in the old
    /// key's renewals), so a daemon of an earlier version keeps what it is sending.
    ///
    /// A move never starts that grace itself, as a claim does: nobody of this version renews
    /// the old key, so each pass would start it again and the rows of daemons that are gone
    /// would never move. It waits instead while the old key's renewals stopped less than a
    /// lease and the longest grace ago (its daemons may be coming back from an outage).
    public func renameSource(pipeline: String, from: String, to: String, lease: Double) async throws -> Int {
        try await connections.transaction { [logger] connection in
            let moved = try await connection.query("""
                WITH lapsed AS MATERIALIZED (
                    SELECT id FROM queued_events WHERE pipeline = \(pipeline) AND source = \(from)
                    AND \(leaseLapsedIn: pipeline, source: from, lease: lease)
                    AND NOT EXISTS (SELECT 1 FROM lease_clocks AS clock WHERE clock.pipeline = \(pipeline) AND clock.source = \(from)
                        AND \(unescaped: Self.databaseNow) - clock.renewed_at BETWEEN \(lease) AND \(lease + Self.longestResumeGrace))
                    FOR UPDATE SKIP LOCKED)
                UPDATE queued_events AS queued SET source = \(to) FROM lapsed WHERE queued.id = lapsed.id RETURNING queued.id
                """, logger: logger).collect().count
            // A user already scheduled under the new key keeps that schedule.
            let (old, new) = (WorkItem.pollKind(source: from), WorkItem.pollKind(source: to))
            // Inserted, not updated: another daemon may schedule the same user under the new key
            // meanwhile, and a conflict would abort the whole move.
            try await connection.query("""
                INSERT INTO work (pipeline, kind, key, due_at, owner, lease_until, attempts, payload, cursor, work_group, created_at)
                SELECT pipeline, \(new), key, due_at, owner, lease_until, attempts, payload, cursor, work_group, created_at
                FROM work WHERE pipeline = \(pipeline) AND kind = \(old) ON CONFLICT DO NOTHING
                """, logger: logger)
            try await connection.query("""
                DELETE FROM work WHERE pipeline = \(pipeline) AND (kind = \(old) OR kind = \(WorkItem.scheduleSyncs) AND key = \(old))
                """, logger: logger)
            // The old key's clock goes with its last row: until then, its grace protects what is left.
            try await connection.query("""
                DELETE FROM lease_clocks WHERE pipeline = \(pipeline) AND source = \(from)
                AND NOT EXISTS (SELECT 1 FROM queued_events WHERE pipeline = \(pipeline) AND source = \(from))
                """, logger: logger)
            return moved
        }
    }

    public func claimQueuedEvents(pipeline: String, source: String, lease: Double, limit: Int) async throws -> [QueuedEvent] {
        let instance = QueuedEvent.thisProcess
        // SKIP LOCKED: daemons claiming at the same moment split the rows instead of waiting. The
        // rows are chosen once, in a materialized CTE (see `PostgresWorkQueue.claim`). Leases are in the
        // database's clock, the one clock every daemon shares.
        let rows = try await connections.transaction { [logger] connection in
            try await Self.startGraceAfterRenewalGap(pipeline: pipeline, source: source, lease: lease, on: connection, logger: logger)
            return try await connection.query("""
            WITH lapsed AS MATERIALIZED (
                SELECT id FROM queued_events WHERE pipeline = \(pipeline) AND source = \(source)
                AND \(leaseLapsedIn: pipeline, source: source, lease: lease)
                ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            UPDATE queued_events AS queued SET instance = \(instance), lease_until = \(unescaped: Self.databaseNow) + \(lease)
            FROM lapsed WHERE queued.id = lapsed.id
            RETURNING queued.id, queued.event_id, queued.user_id, queued.time, queued.body, queued.caller, queued.replay_of, queued.trace_parent
            """, logger: logger).collect()
        }
        var claimed: [(Int64, QueuedEvent)] = []
        for (id, eventID, user, time, body, caller, replayOf, traceParent)
            in try rows.decode((Int64, String, String?, Double, String, String?, String?, String?).self) {
            claimed.append((id, try Self.queuedEvent(pipeline: pipeline, source: source, instance: instance, eventID: eventID, user: user, time: time,
                                                     body: body, caller: caller, replayOf: replayOf, traceParent: traceParent, lease: lease)))
        }
        return claimed.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// Nobody renewed for longer than a lease: an outage the holders are coming back from, or
    /// daemons that died. The first statement after such a gap, a claim, a move or a renewal,
    /// starts the grace in which holders renew before anything is taken: a claim that came
    /// first would otherwise take back what is still being delivered.
    static func startGraceAfterRenewalGap(pipeline: String, source: String, lease: Double, on connection: PostgresConnection,
                                          logger: Logger) async throws {
        try await connection.query("""
            UPDATE lease_clocks SET resumed_at = \(unescaped: Self.databaseNow), gap = \(unescaped: Self.databaseNow) - renewed_at,
                renewed_at = \(unescaped: Self.databaseNow)
            WHERE pipeline = \(pipeline) AND source = \(source) AND \(unescaped: Self.databaseNow) - renewed_at > \(lease)
            """, logger: logger)
    }

    /// Renews the leases of the events this process holds, and beats the source's lease clock.
    ///
    /// The clock tells claims when nobody renewed anything for longer than a lease (the
    /// database was away, or every daemon was): every lease may have lapsed while its holder
    /// was still delivering. Claims then wait until the holders, reconnecting at their pools'
    /// own pace, have renewed: a lease, or the length of the gap (up to a limit), after the
    /// first renewal that followed it.
    public func renewLeases(pipeline: String, source: String, eventIDs: [String], lease: Double) async throws {
        try await connections.transaction { [logger] connection in
            if lease > 0 {
                try await connection.query("""
                    INSERT INTO lease_clocks AS clock (pipeline, source, renewed_at, resumed_at, gap)
                    VALUES (\(pipeline), \(source), \(unescaped: Self.databaseNow), 0, 0)
                    ON CONFLICT (pipeline, source) DO UPDATE SET
                        resumed_at = CASE WHEN excluded.renewed_at - clock.renewed_at > \(lease) THEN excluded.renewed_at ELSE clock.resumed_at END,
                        gap = CASE WHEN excluded.renewed_at - clock.renewed_at > \(lease) THEN excluded.renewed_at - clock.renewed_at ELSE clock.gap END,
                        renewed_at = greatest(clock.renewed_at, excluded.renewed_at)
                    """, logger: logger)
            }
            guard !eventIDs.isEmpty else { return }
            try await connection.query("""
                UPDATE queued_events SET lease_until = \(unescaped: Self.databaseNow) + \(lease)
                WHERE pipeline = \(pipeline) AND source = \(source) AND instance = \(QueuedEvent.thisProcess) AND event_id = ANY(\(eventIDs))
                """, logger: logger)
        }
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
