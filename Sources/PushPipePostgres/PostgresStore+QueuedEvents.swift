import Logging
import PostgresNIO
import PushPipeCore

/// Accepted events as work items (`QueuedEvent+Work`); they go in and out in the group commit.
extension PostgresStore {
    public func enqueue(_ event: QueuedEvent) async throws {
        try await outcomes.submit(.enqueue(event))
    }

    public func queuedEventCounts() async throws -> [QueuedEventCount] {
        try await connections.rows(
            """
            SELECT pipeline, kind, count(*) FROM work WHERE \(unescaped: Self.isQueuedEvent) GROUP BY pipeline, kind ORDER BY pipeline, kind
            """
        ).decode((String, String, Int).self).map { QueuedEventCount(pipeline: $0.0, source: QueuedEvent.source(ofKind: $0.1) ?? "", count: $0.2) }
    }

    /// The events of `eventID` still waiting, oldest first, in one look at the queued events'
    /// index (`work_events`, in the C collation so that the key's range is bytes').
    func queuedEvents(eventID: String, pipeline: String?) async throws -> [QueuedEvent] {
        let rows = try await connections.rows(
            """
            SELECT pipeline, owner, \(unescaped: PostgresWorkQueue.columns) FROM work WHERE \(unescaped: Self.isQueuedEvent)
            AND key COLLATE "C" >= \(StoredText.storable(QueuedEvent.keyPrefix(eventID: eventID)))
            AND key COLLATE "C" < \(StoredText.storable(eventID) + "\u{0B}")
            AND (\(pipeline)::text IS NULL OR pipeline = \(pipeline)) ORDER BY id
            """
        )
        return try rows.decode((String, String?, Int64, String, String, String, Int, Double, String?, String?).self).compactMap { row in
            guard let payload = try? JSON.parse(row.5) else { return nil }
            let item = WorkItem(id: row.2, kind: row.3, key: row.4, payload: payload, attempts: row.6, createdAt: row.7, group: row.8, cursor: row.9)
            return try? QueuedEvent(work: item, pipeline: row.0, owner: row.1, lease: .zero)
        }.filter { StoredText.storable($0.eventID) == StoredText.storable(eventID) }
    }

    /// The term the queued events' partial index is for (`work_events`): written the same way wherever used.
    static let isQueuedEvent = "left(kind, \(QueuedEvent.kinds.utf8.count)) = '\(QueuedEvent.kinds)'"

    /// Moves into the work queue the events that daemons of an earlier version (which keep them
    /// in `queued_events`) accepted and let lapse: such daemons may run beside this one while a
    /// group is upgraded one daemon at a time, and go on sending what they hold. Before each
    /// claim of the source's events, and each move of its key, with a move's rule: nobody of this
    /// version renews the old clock, so a claim's grace would start again at every pass.
    static func adoptEarlierQueuedEvents(pipeline: String, source: String, lease: Duration, connections: PostgresConnections) async throws {
        // Locked and skipped as a claim is: an earlier daemon's claim or renewal of a row
        // between the choice and the delete would otherwise not be seen.
        _ = try await connections.rows(
            """
            WITH lapsed AS MATERIALIZED (
                SELECT id FROM queued_events WHERE pipeline = \(pipeline) AND source = \(source)
                AND \(lapsedIn: pipeline, kind: source, lease: lease, claiming: false, holder: "instance") FOR UPDATE SKIP LOCKED),
            moved AS (
                DELETE FROM queued_events USING lapsed WHERE queued_events.id = lapsed.id
                RETURNING pipeline, source, queued_events.id, event_id, user_id, time, body, caller, replay_of, trace_parent)
            INSERT INTO work (pipeline, kind, key, due_at, payload, created_at)
            SELECT pipeline, \(QueuedEvent.kinds) || source, event_id || E'\\n' || 'q-' || id, \(unescaped: databaseNow),
                   json_build_object('event_id', event_id, 'user', user_id, 'time', time, 'body', body::json, 'caller', caller,
                                     'replay_of', replay_of::json, 'trace_parent', trace_parent)::text, time
            FROM moved ORDER BY id ON CONFLICT DO NOTHING
            """
        )
    }
}

extension PostgresPipelineStore {
    /// Every daemon of a group may do it, at its start and then every lease: an event moves
    /// once, when a claim could take it (the same lapse, and the same grace after a gap in the
    /// old key's renewals), so a daemon of an earlier version keeps what it is sending.
    func renameSource(from: String, to: String, lease: Duration) async throws -> Int {
        let (oldKind, newKind) = (QueuedEvent.kind(source: from), QueuedEvent.kind(source: to))
        try await PostgresStore.adoptEarlierQueuedEvents(pipeline: pipeline, source: from, lease: lease, connections: store.connections)
        return try await store.connections.transaction { connection in
            let moved = try await connection.query(
                """
                WITH lapsed AS MATERIALIZED (
                    SELECT id FROM work WHERE pipeline = \(pipeline) AND kind = \(oldKind)
                    AND \(lapsedIn: pipeline, kind: oldKind, lease: lease, claiming: false) FOR UPDATE SKIP LOCKED)
                UPDATE work SET kind = \(newKind) FROM lapsed WHERE work.id = lapsed.id RETURNING work.id
                """,
                logger: store.logger
            ).collect().count
            // A user already scheduled under the new key keeps that schedule.
            let (old, new) = (WorkItem.pollKind(source: from), WorkItem.pollKind(source: to))
            // Inserted, not updated: another daemon may schedule the same user under the new key
            // meanwhile, and a conflict would abort the whole move.
            try await connection.query(
                """
                INSERT INTO work (pipeline, kind, key, due_at, owner, lease_until, attempts, payload, cursor, work_group, created_at)
                SELECT pipeline, \(new), key, due_at, owner, lease_until, attempts, payload, cursor, work_group, created_at
                FROM work WHERE pipeline = \(pipeline) AND kind = \(old) ON CONFLICT DO NOTHING
                """,
                logger: store.logger
            )
            try await connection.query(
                """
                DELETE FROM work WHERE pipeline = \(pipeline) AND (kind = \(old) OR kind = \(WorkItem.scheduleSyncs) AND key = \(old))
                """,
                logger: store.logger
            )
            // The old key's clock goes with its last item: until then, its grace protects what is left.
            try await connection.query(
                """
                DELETE FROM lease_clocks WHERE pipeline = \(pipeline) AND source = \(oldKind)
                AND NOT EXISTS (SELECT 1 FROM work WHERE pipeline = \(pipeline) AND kind = \(oldKind))
                """,
                logger: store.logger
            )
            return moved
        }
    }
}
