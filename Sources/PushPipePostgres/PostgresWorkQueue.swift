import Logging
import PostgresNIO
import PushPipeCore

/// A pipeline's work items in the `work` table, shared by every daemon on the database. Due
/// times and leases are on the database's clock: daemons' own clocks disagree.
struct PostgresWorkQueue: WorkQueue {
    let connections: PostgresConnections
    let logger: Logger
    let pipeline: String

    func add(_ items: [WorkItem], after delays: [Duration]) async throws {
        precondition(items.count == delays.count, "a delay per item")
        guard !items.isEmpty else { return }
        try await connections.transaction { [logger, pipeline] connection in
            try await Self.insert(items, pipeline: pipeline, after: delays, on: connection, logger: logger)
        }
    }

    /// Also in the transaction of another write (webhook outcomes with their deliveries, a
    /// replay with its dead letter; accepted events go in `OutcomeRows`). An item with an owner
    /// (`owners`, by position) is held by it until it is due.
    static func insert(
        _ items: [WorkItem],
        pipeline: String,
        after delays: [Duration],
        heldBy owners: [String?]? = nil,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        // In the order of their keys: two transactions inserting the same keys wait for each
        // other in one order, never in a cycle (a deadlock would abort a whole group commit).
        let rows: [JSON] = items.indices.sorted { (items[$0].kind, items[$0].key) < (items[$1].kind, items[$1].key) }.map { index in
            let item = items[index]
            return [
                "kind": .string(item.kind), "key": .string(item.key), "payload": .string(item.payload.compactText),
                "attempts": .int(Int64(item.attempts)),
                "created_at": .double(item.createdAt), "work_group": item.group.map(JSON.string) ?? .null,
                "cursor": item.cursor.map(JSON.string) ?? .null,
                "delay": .double(delays[index].inSeconds), "owner": owners?[index].map(JSON.string) ?? .null,
            ]
        }
        try await connection.query(
            """
            INSERT INTO work (pipeline, kind, key, due_at, owner, lease_until, payload, attempts, created_at, work_group, cursor)
            SELECT \(pipeline), kind, key, \(unescaped: PostgresStore.databaseNow) + delay, owner,
                   CASE WHEN owner IS NULL THEN 0 ELSE \(unescaped: PostgresStore.databaseNow) + delay END, payload, attempts, created_at, work_group,
                   cursor
            FROM jsonb_to_recordset(\(jsonb: rows)::jsonb) AS w(kind text, key text, payload text, attempts integer, created_at double precision,
                                                               work_group text, cursor text, delay double precision, owner text)
            ON CONFLICT (pipeline, kind, key) DO NOTHING
            """,
            logger: logger
        )
    }

    func claim(_ kind: String, limit: Int, lease: Duration, grouping: WorkGrouping?) async throws -> [WorkItem] {
        let owner = LeaseOwner.thisProcess
        if let source = QueuedEvent.source(ofKind: kind) {
            // What cannot move now waits in the earlier table: this version's events are still claimed.
            do {
                try await PostgresStore.adoptEarlierQueuedEvents(pipeline: pipeline, source: source, lease: lease, connections: connections)
            } catch  where !(error is CancellationError) && !StoreAvailability.meansAway(error) {
                logger.warning("queued events: could not move what daemons of an earlier version left under \(source): \(error)")
            }
        }
        guard let grouping else {
            // SKIP LOCKED: daemons claiming at the same moment split the due items between them.
            // Chosen once, in a materialized CTE: as `IN (SELECT … LIMIT)` the planner may run
            // the subquery again and take more than the limit.
            return try Self.items(
                try await connections.rows(
                    """
                    WITH \(startGrace: pipeline, kind: kind, lease: lease), due AS MATERIALIZED (
                        SELECT id AS due_id FROM work WHERE pipeline = \(pipeline) AND kind = \(kind) AND due_at <=
                        \(unescaped: PostgresStore.databaseNow)
                        AND \(lapsedIn: pipeline, kind: kind, lease: lease, claiming: true) ORDER BY due_at, id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                    UPDATE work SET owner = \(owner), lease_until = \(unescaped: PostgresStore.databaseNow) + \(lease),
                        due_at = \(unescaped: PostgresStore.databaseNow) + \(lease)
                    FROM due WHERE work.id = due.due_id
                    RETURNING \(unescaped: Self.columns)
                    """
                )
            )
        }
        // One grouped claim at a time per kind (a transaction's advisory lock), so each takes
        // whole groups: two claims at once (`SKIP LOCKED`) could each get part of one.
        return try await connections.transaction { [logger, pipeline] connection in
            try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\("pushpipe.work/\(pipeline)/\(kind)"), 0))", logger: logger)
            let chosen = try Self.items(
                try await connection.query(
                    """
                    WITH \(startGrace: pipeline, kind: kind, lease: lease)
                    SELECT \(unescaped: Self.columns) FROM work WHERE pipeline = \(pipeline) AND kind = \(kind)
                    AND due_at <= \(unescaped: PostgresStore.databaseNow) AND \(lapsedIn: pipeline, kind: kind, lease: lease, claiming: true)
                    ORDER BY due_at, id LIMIT \(limit)
                    """,
                    logger: logger
                ).collect()
            )
            var groups = Set(chosen.compactMap(\.group))
            for (group, ids) in grouping(chosen.filter { $0.group == nil }) {
                try await connection.query("UPDATE work SET work_group = \(group) WHERE id = ANY(\(ids))", logger: logger)
                groups.insert(group)
            }
            return try Self.items(
                try await connection.query(
                    """
                    UPDATE work SET owner = \(owner), lease_until = \(unescaped: PostgresStore.databaseNow) + \(lease),
                        due_at = \(unescaped: PostgresStore.databaseNow) + \(lease)
                    WHERE pipeline = \(pipeline) AND kind = \(kind) AND work_group = ANY(\(Array(groups)))
                    AND \(lapsedIn: pipeline, kind: kind, lease: lease, claiming: false)
                    RETURNING \(unescaped: Self.columns)
                    """,
                    logger: logger
                ).collect()
            )
        }
    }

    /// Also beats the kind's lease clock (`lease_clocks`), whose gaps claims respect
    /// (`appendInterpolation(lapsedIn:…)`). Two statements, not one transaction: every holder
    /// of the kind beats the same row, and a renewal that waited for it inside a transaction
    /// would write leases counted from the transaction's start, lapsed already if the wait was longer.
    /// The leases are counted from when each row is written. Holds are taken keys nobody
    /// claims: no clock.
    func renew(_ kind: String, keys: Set<String>, lease: Duration) async throws {
        // A lease that ends at once is a holder letting go, not renewing.
        if lease > .zero && !kind.hasPrefix(WorkItem.holdKinds) {
            _ = try await connections.rows(
                """
                INSERT INTO lease_clocks AS clock (pipeline, source, renewed_at, resumed_at, gap)
                VALUES (\(pipeline), \(kind), \(unescaped: PostgresStore.databaseNow), 0, 0)
                ON CONFLICT (pipeline, source) DO UPDATE SET
                    resumed_at = CASE WHEN excluded.renewed_at - clock.renewed_at > \(lease) THEN excluded.renewed_at ELSE clock.resumed_at END,
                    gap = CASE WHEN excluded.renewed_at - clock.renewed_at > \(lease) THEN excluded.renewed_at - clock.renewed_at ELSE clock.gap END,
                    renewed_at = greatest(clock.renewed_at, excluded.renewed_at)
                """
            )
        }
        guard !keys.isEmpty else { return }
        // A claimed item falls due again when its lease ends; a taken key never does.
        _ = try await connections.rows(
            """
            UPDATE work SET lease_until = \(unescaped: PostgresStore.databaseClock) + \(lease),
                due_at = CASE WHEN due_at < \(takenKeysFallDue) THEN \(unescaped: PostgresStore.databaseClock) + \(lease) ELSE due_at END
            WHERE pipeline = \(pipeline) AND kind = \(kind) AND key = ANY(\(Array(keys))) AND owner = \(LeaseOwner.thisProcess)
            """
        )
    }

    func complete(_ kind: String, keys: Set<String>) async throws {
        guard !keys.isEmpty else { return }
        _ = try await connections.rows(
            """
            DELETE FROM work WHERE pipeline = \(pipeline) AND kind = \(kind) AND key = ANY(\(Array(keys))) AND owner = \(LeaseOwner.thisProcess)
            """
        )
    }

    func retry(_ kind: String, keys: Set<String>, after delay: Duration) async throws {
        guard !keys.isEmpty else { return }
        _ = try await connections.rows(
            """
            UPDATE work SET attempts = attempts + 1, due_at = \(unescaped: PostgresStore.databaseNow) + \(delay), owner = NULL, lease_until = 0
            WHERE pipeline = \(pipeline) AND kind = \(kind) AND key = ANY(\(Array(keys))) AND owner = \(LeaseOwner.thisProcess)
            """
        )
    }

    func release(_ kind: String, keys: Set<String>) async throws {
        guard !keys.isEmpty else { return }
        _ = try await connections.rows(
            """
            UPDATE work SET owner = NULL, lease_until = 0, due_at = least(due_at, \(unescaped: PostgresStore.databaseNow))
            WHERE pipeline = \(pipeline) AND kind = \(kind) AND key = ANY(\(Array(keys))) AND owner = \(LeaseOwner.thisProcess)
            """
        )
    }

    func item(_ kind: String, key: String) async throws -> WorkItem? {
        try Self.items(
            try await connections.rows(
                "SELECT \(unescaped: Self.columns) FROM work WHERE pipeline = \(pipeline) AND kind = \(kind) AND key = \(key)"
            )
        ).first
    }

    /// Webhook outcomes first take over what daemons of an earlier version left in their outbox
    /// (`adoptEarlierOutcomes`).
    func prune(_ kind: String, createdBefore cutoff: Double, limit: Int) async throws -> Int {
        if kind == WebhookOutcome.kind { _ = try await connections.rows(PostgresStore.adoptEarlierOutcomes(pipeline: pipeline)) }
        return try await connections.rows(
            """
            DELETE FROM work WHERE id IN (
                SELECT id FROM work WHERE pipeline = \(pipeline) AND kind = \(kind) AND created_at < \(cutoff) ORDER BY id LIMIT \(limit))
            RETURNING id
            """
        ).count
    }

    func keys(_ kind: String) async throws -> [String] {
        try await connections.rows("SELECT key FROM work WHERE pipeline = \(pipeline) AND kind = \(kind)").map { try $0.decode(String.self) }
    }

    func remove(_ kind: String, keys: [String]) async throws {
        guard !keys.isEmpty else { return }
        _ = try await connections.rows("DELETE FROM work WHERE pipeline = \(pipeline) AND kind = \(kind) AND key = ANY(\(keys))")
    }

    func admit(_ item: WorkItem, limits: [WorkLimit], adding: Bool) async throws -> Bool {
        let group = item.group.map { StoredText.storable($0) }
        return try await connections.transaction { [logger, pipeline] connection in
            try await Self.readCommitted(connection, logger: logger)
            // Daemons admitting into one group take turns: the lock is held to the commit.
            let lock = "\(pipeline)\n\(item.kind)\n\(group ?? "")"
            _ = try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(lock), 0))", logger: logger).collect()
            let key = StoredText.storable(item.key)
            let admitted = try await connection.query(
                "SELECT 1 FROM work WHERE pipeline = \(pipeline) AND kind = \(item.kind) AND key = \(key)",
                logger: logger
            ).collect()
            if !admitted.isEmpty { return true }
            for limit in limits {
                let rows = try await connection.query(
                    """
                    SELECT count(*) FROM work
                    WHERE pipeline = \(pipeline) AND kind = \(item.kind) AND work_group = \(group) AND created_at > \(limit.since)
                    """,
                    logger: logger
                ).collect()
                if try rows.first?.decode(Int.self) ?? 0 >= limit.count { return false }
            }
            if adding { _ = try await Self.insertNeverDue(item, pipeline: pipeline, on: connection, logger: logger) }
            return true
        }
    }

    func accumulate(_ item: WorkItem, _ combine: @escaping @Sendable (JSON) -> JSON) async throws -> JSON {
        try await connections.transaction { [logger, pipeline] connection in
            try await Self.readCommitted(connection, logger: logger)
            let key = StoredText.storable(item.key)
            // The row locked to the commit: daemons combining at once take turns.
            let rows = try await connection.query(
                "SELECT payload FROM work WHERE pipeline = \(pipeline) AND kind = \(item.kind) AND key = \(key) FOR UPDATE",
                logger: logger
            ).collect()
            guard let stored = try rows.first?.decode(String.self) else {
                if try await Self.insertNeverDue(item, pipeline: pipeline, on: connection, logger: logger) { return item.payload }
                // Another daemon added the key at the same moment: combine into what it stored.
                let theirs = try await connection.query(
                    "SELECT payload FROM work WHERE pipeline = \(pipeline) AND kind = \(item.kind) AND key = \(key) FOR UPDATE",
                    logger: logger
                ).collect()
                let payload = try theirs.first.map { try JSON.parse(try $0.decode(String.self)) } ?? item.payload
                return try await Self.replace(payload: combine(payload), of: item, key: key, pipeline: pipeline, on: connection, logger: logger)
            }
            return try await Self.replace(
                payload: combine(try JSON.parse(stored)),
                of: item,
                key: key,
                pipeline: pipeline,
                on: connection,
                logger: logger
            )
        }
    }

    /// Adds `item` never due (`WorkItem.neverDue`) unless its key is there; returns whether it was added.
    private static func insertNeverDue(_ item: WorkItem, pipeline: String, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        let group = item.group.map { StoredText.storable($0) }
        return try await !connection.query(
            """
            INSERT INTO work (pipeline, kind, key, due_at, payload, created_at, work_group)
            VALUES (\(pipeline), \(item.kind), \(StoredText.storable(item.key)), \(WorkItem.neverDue), \(item.payload.compactText), \(item.createdAt), \(group))
            ON CONFLICT (pipeline, kind, key) DO NOTHING RETURNING id
            """,
            logger: logger
        ).collect().isEmpty
    }

    private static func replace(
        payload: JSON,
        of item: WorkItem,
        key: String,
        pipeline: String,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> JSON {
        _ = try await connection.query(
            "UPDATE work SET payload = \(payload.compactText) WHERE pipeline = \(pipeline) AND kind = \(item.kind) AND key = \(key)",
            logger: logger
        ).collect()
        return payload
    }

    func takeAway(_ kind: String, key: String, if accept: @escaping @Sendable (WorkItem) -> Bool) async throws -> WorkItem? {
        try await connections.transaction { [logger, pipeline] connection in
            try await Self.readCommitted(connection, logger: logger)
            let key = StoredText.storable(key)
            // Locked to the commit: of daemons taking it at once, the first decides.
            let rows = try await connection.query(
                "SELECT \(unescaped: Self.columns) FROM work WHERE pipeline = \(pipeline) AND kind = \(kind) AND key = \(key) FOR UPDATE",
                logger: logger
            ).collect()
            guard let item = try Self.items(Array(rows)).first, accept(item) else { return nil }
            _ = try await connection.query("DELETE FROM work WHERE id = \(item.id)", logger: logger).collect()
            return item
        }
    }

    func withdraw(_ kind: String, keysStartingWith prefix: String, if accept: @escaping @Sendable (WorkItem) -> Bool) async throws -> [WorkItem] {
        let (start, end) = (StoredText.storable(prefix), StoredText.storable(Self.keysEnd(startingWith: prefix)))
        // Queued events' keys have an index of their own, compared as bytes (`work_events`).
        let queuedKinds = QueuedEvent.source(ofKind: kind) == nil ? "true" : PostgresStore.isQueuedEvent
        return try await connections.transaction { [logger, pipeline] connection in
            try await Self.readCommitted(connection, logger: logger)
            // What a claim locked is on its way: skipped, as a claim skips what another holds.
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Self.columns) FROM work WHERE pipeline = \(pipeline) AND kind = \(kind) AND \(unescaped: queuedKinds)
                AND key COLLATE "C" >= \(start) AND key COLLATE "C" < \(end)
                AND (owner IS NULL OR lease_until < \(unescaped: PostgresStore.databaseNow)) FOR UPDATE SKIP LOCKED
                """,
                logger: logger
            ).collect()
            let withdrawn = try Self.items(Array(rows)).filter(accept)
            guard !withdrawn.isEmpty else { return [] }
            _ = try await connection.query("DELETE FROM work WHERE id = ANY(\(withdrawn.map(\.id)))", logger: logger).collect()
            return withdrawn
        }
    }

    /// Each statement sees what committed before it, whatever the server's default isolation:
    /// under REPEATABLE READ a count taken after a lock was granted would read a snapshot
    /// from before it, and a row locked after another's update would fail to serialize.
    static func readCommitted(_ connection: PostgresConnection, logger: Logger) async throws {
        _ = try await connection.query("SET TRANSACTION ISOLATION LEVEL READ COMMITTED", logger: logger).collect()
    }

    func take(_ kind: String, keys: Set<String>, lease: Duration) async throws -> Set<String> {
        guard !keys.isEmpty else { return [] }
        // Taken when nobody has the key or its holder's lease ran out, on the database's clock.
        let taken = try await connections.rows(
            """
            INSERT INTO work (pipeline, kind, key, due_at, owner, lease_until, payload, created_at)
            SELECT \(pipeline), \(kind), key, \(takenKeysFallDue), \(LeaseOwner.thisProcess), \(unescaped: PostgresStore.databaseNow) + \(lease),
            '{}',
                   \(unescaped: PostgresStore.databaseNow)
            FROM unnest(\(Array(keys))::text[]) AS key
            ON CONFLICT (pipeline, kind, key) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until
            WHERE work.lease_until < \(unescaped: PostgresStore.databaseNow)
            RETURNING key
            """
        )
        return Set(try taken.map { try $0.decode(String.self) })
    }

    func forgetLapsedTakes(kindsStartingWith prefix: String) async throws -> Int {
        try await connections.rows(
            """
            DELETE FROM work WHERE pipeline = \(pipeline) AND left(kind, length(\(prefix))) = \(prefix) AND due_at >= \(takenKeysFallDue)
            AND lease_until < \(unescaped: PostgresStore.databaseNow) RETURNING id
            """
        ).count
    }

    static let columns = "id, kind, key, payload, attempts, created_at, work_group, cursor"

    /// Rows of `columns`, in the order the items were added.
    static func items(_ rows: [PostgresRow]) throws -> [WorkItem] {
        try rows.decode((Int64, String, String, String, Int, Double, String?, String?).self).map { row in
            WorkItem(
                id: row.0,
                kind: row.1,
                key: row.2,
                payload: try JSON.parse(row.3),
                attempts: row.4,
                createdAt: row.5,
                group: row.6,
                cursor: row.7
            )
        }.sorted { $0.id < $1.id }
    }
}

extension PostgresStore {
    /// Moves into the work queue the outcomes that daemons of an earlier version (which keep
    /// them in `webhook_outbox`) wrote and nobody holds. Such daemons may run beside this one
    /// while a group is upgraded one daemon at a time: they go on sending what they hold, and
    /// what they leave moves here at this daemon's start and at each retention pass.
    static func adoptEarlierOutcomes(pipeline: String?) -> PostgresQuery {
        """
        WITH moved AS (
            DELETE FROM webhook_outbox WHERE (\(pipeline)::text IS NULL OR pipeline = \(pipeline)) AND lease_until < \(unescaped: databaseNow)
            RETURNING pipeline, target, outcome_id, payload, created_at, attempts, next_at, batch)
        INSERT INTO work (pipeline, kind, key, due_at, attempts, payload, work_group, created_at)
        SELECT pipeline, 'webhook', target || E'\\n' || outcome_id, next_at, attempts,
               json_build_object('target', target, 'outcome_id', outcome_id, 'payload', payload::json)::text, batch, created_at
        FROM moved ORDER BY created_at ON CONFLICT DO NOTHING
        """
    }
}
