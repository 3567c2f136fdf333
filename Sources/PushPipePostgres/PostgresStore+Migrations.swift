import Logging
import PostgresNIO
import PushPipeCore

extension PostgresStore {
    /// Versioned schema. Never edit a shipped migration: add the next one.
    static let migrations: [(name: String, sql: [PostgresQuery])] = [
        (
            "v1-schema",
            [
                """
                CREATE TABLE registrations (
                    pipeline TEXT NOT NULL, user_id TEXT NOT NULL, token_kind TEXT NOT NULL, token TEXT NOT NULL,
                    scope TEXT NOT NULL DEFAULT '', environment TEXT,
                    created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL,
                    PRIMARY KEY (pipeline, user_id, token_kind, token))
                """,
                "CREATE INDEX registrations_by_token ON registrations (pipeline, token)",
                """
                CREATE TABLE settings (
                    pipeline TEXT NOT NULL, user_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
                    updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (pipeline, user_id, key))
                """,
                """
                CREATE TABLE stage_state (
                    pipeline TEXT NOT NULL, stage TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
                    updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (pipeline, stage, key))
                """,
                """
                CREATE TABLE deliveries (
                    id BIGSERIAL PRIMARY KEY, pipeline TEXT NOT NULL, event_id TEXT NOT NULL, user_id TEXT NOT NULL,
                    token_kind TEXT NOT NULL, token TEXT NOT NULL, outcome TEXT NOT NULL, reason TEXT, provider_id TEXT,
                    attempts BIGINT NOT NULL, created_at DOUBLE PRECISION NOT NULL, record TEXT)
                """,
                "CREATE INDEX deliveries_by_user ON deliveries (pipeline, user_id, id)",
                "CREATE INDEX deliveries_by_age ON deliveries (pipeline, created_at)",
                """
                CREATE TABLE queued_events (
                    id BIGSERIAL PRIMARY KEY, pipeline TEXT NOT NULL, source TEXT NOT NULL, instance TEXT NOT NULL,
                    event_id TEXT NOT NULL, user_id TEXT, time DOUBLE PRECISION NOT NULL, body TEXT NOT NULL)
                """,
                "CREATE INDEX queued_events_by_event ON queued_events (pipeline, event_id)",
            ]
        ),
        (
            "v2-queued-event-leases",
            [
                "ALTER TABLE queued_events ADD COLUMN lease_until DOUBLE PRECISION NOT NULL DEFAULT 0",
                "CREATE INDEX queued_events_by_lease ON queued_events (pipeline, source, lease_until)",
            ]
        ),
        (
            "v3-poll-schedule",
            [
                """
                CREATE TABLE poll_schedule (
                    pipeline TEXT NOT NULL, source TEXT NOT NULL, user_id TEXT NOT NULL, due_at DOUBLE PRECISION NOT NULL,
                    PRIMARY KEY (pipeline, source, user_id))
                """,
                "CREATE INDEX poll_schedule_by_due ON poll_schedule (pipeline, source, due_at)",
            ]
        ),
        (
            "v4-stage-holds",
            [
                """
                CREATE TABLE stage_holds (
                    pipeline TEXT NOT NULL, stage TEXT NOT NULL, key TEXT NOT NULL, owner TEXT NOT NULL,
                    until DOUBLE PRECISION NOT NULL, PRIMARY KEY (pipeline, stage, key))
                """
            ]
        ),
        (
            "v5-lease-clocks",
            [
                """
                CREATE TABLE lease_clocks (
                    pipeline TEXT NOT NULL, source TEXT NOT NULL, renewed_at DOUBLE PRECISION NOT NULL,
                    resumed_at DOUBLE PRECISION NOT NULL, gap DOUBLE PRECISION NOT NULL, PRIMARY KEY (pipeline, source))
                """,
                """
                CREATE TABLE poll_syncs (
                    pipeline TEXT NOT NULL, source TEXT NOT NULL, synced_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (pipeline, source))
                """,
            ]
        ),
        // One row per key a request carried (`IdempotencyStore`): its answer once stored, until
        // then the hold of the request storing it. The primary key is what makes a key hold
        // across daemons.
        (
            "v6-idempotency-keys",
            [
                """
                CREATE TABLE idempotency_keys (
                    pipeline TEXT NOT NULL, scope TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL,
                    status INTEGER, body TEXT, held_until DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL,
                    PRIMARY KEY (pipeline, scope, key))
                """,
                "CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (pipeline, expires_at)",
            ]
        ),
        // What became of each event (`EventRecordStore`): its state and times as columns, the
        // rest as JSON. Rows arrive in the order of `created_at`, so a BRIN index (a few pages,
        // next to nothing per insert) serves retention; dead letters have an index of their own.
        (
            "v7-event-records",
            [
                """
                CREATE TABLE event_records (
                    pipeline TEXT NOT NULL, event_id TEXT NOT NULL, state TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
                    updated_at DOUBLE PRECISION NOT NULL, record TEXT NOT NULL, PRIMARY KEY (pipeline, event_id))
                """,
                "CREATE INDEX event_records_by_age ON event_records USING brin (created_at)",
                "CREATE INDEX event_records_dead_letters ON event_records (updated_at) WHERE state = 'dead_letter'",
                "ALTER TABLE queued_events ADD COLUMN caller TEXT",
                "ALTER TABLE queued_events ADD COLUMN replay_of TEXT",
            ]
        ),
        // Outcomes waiting for a webhook (`WebhookOutboxStore`), claimed like queued events.
        (
            "v8-webhook-outbox",
            [
                """
                CREATE TABLE webhook_outbox (
                    id BIGSERIAL PRIMARY KEY, pipeline TEXT NOT NULL, target TEXT NOT NULL, outcome_id TEXT NOT NULL, payload TEXT NOT NULL,
                    created_at DOUBLE PRECISION NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_at DOUBLE PRECISION NOT NULL,
                    lease_until DOUBLE PRECISION NOT NULL DEFAULT 0)
                """,
                "CREATE INDEX webhook_outbox_due ON webhook_outbox (pipeline, next_at)",
            ]
        ),
        // The caller's W3C traceparent: an event sent after a restart still continues its trace.
        (
            "v9-queued-trace-parent",
            [
                "ALTER TABLE queued_events ADD COLUMN trace_parent TEXT"
            ]
        ),
        // The batch (`webhook-id`) each waiting outcome is sent in, fixed by its first claim, so a
        // retry sends the same outcomes under the same id.
        (
            "v10-webhook-batches",
            [
                "ALTER TABLE webhook_outbox ADD COLUMN batch TEXT",
                "CREATE INDEX webhook_outbox_batches ON webhook_outbox (pipeline, batch) WHERE batch IS NOT NULL",
            ]
        ),
        // When the daemon first delivered to a token (`ConfirmedTokens`): eviction by
        // `max_tokens_per_user` removes tokens nobody has received anything on first.
        (
            "v11-registration-confirmed",
            [
                "ALTER TABLE registrations ADD COLUMN confirmed_at DOUBLE PRECISION"
            ]
        ),
        // Which request holds an unanswered key: a failed request releases only its own hold.
        (
            "v12-idempotency-holder",
            [
                "ALTER TABLE idempotency_keys ADD COLUMN holder TEXT NOT NULL DEFAULT ''"
            ]
        ),
        // Durable work of every kind in one table (`WorkQueue`): webhook outcomes (those nobody
        // holds move in from their own table with their batch, attempts and due time) and
        // stage holds.
        (
            "v13-work",
            [
                """
                CREATE TABLE work (
                    id BIGSERIAL PRIMARY KEY, pipeline TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL,
                    due_at DOUBLE PRECISION NOT NULL, owner TEXT, lease_until DOUBLE PRECISION NOT NULL DEFAULT 0,
                    attempts INTEGER NOT NULL DEFAULT 0, payload TEXT NOT NULL, cursor TEXT, work_group TEXT,
                    created_at DOUBLE PRECISION NOT NULL, UNIQUE (pipeline, kind, key))
                """,
                "CREATE INDEX work_due ON work (pipeline, kind, due_at)",
                "CREATE INDEX work_groups ON work (pipeline, kind, work_group) WHERE work_group IS NOT NULL",
                // The earlier tables stay while daemons of an earlier version may still use them
                // (`PostgresStore.adoptEarlierOutcomes`); holds there lapse within their lease.
                adoptEarlierOutcomes(pipeline: nil),
            ]
        ),
        // Pollers' schedules become recurring work items (`WorkQueue.schedule`), one kind per
        // source. `poll_schedule` stays for daemons of an earlier version: while both run, a
        // user may be checked twice in an interval, which the watermarks make harmless.
        (
            "v14-poll-work",
            [
                """
                INSERT INTO work (pipeline, kind, key, due_at, payload, created_at)
                SELECT pipeline, 'poll:' || source, user_id, due_at, '{}', due_at FROM poll_schedule ORDER BY due_at
                ON CONFLICT DO NOTHING
                """
            ]
        ),
        // Accepted events become work items (`QueuedEvent+Work`), one kind per source; a partial
        // index finds an event's items by id (the status route), its keys compared as bytes.
        // `queued_events` stays for daemons of an earlier version: what they let lapse moves
        // over at each claim (`adoptEarlierQueuedEvents`).
        (
            "v15-queued-work",
            [
                "CREATE INDEX work_events ON work ((key COLLATE \"C\")) WHERE \(unescaped: isQueuedEvent)"
            ]
        ),
    ]

    public static var migrationNames: [String] { migrations.map(\.name) }

    /// Applies what is missing, in one transaction holding an advisory lock: daemons that
    /// start together against an empty database wait, and the first one migrates it.
    static func migrate(_ connection: PostgresConnection, logger: Logger) async throws {
        do {
            try await applyMissingMigrations(connection, logger: logger)
        } catch let error as PostgresTransactionError {
            // Told as it is, not inside the transaction's wrapper.
            if let newer = error.closureError as? NewerDatabaseError { throw newer }
            throw error
        }
    }

    private static func applyMissingMigrations(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Int64(0x7075_7368_7069_7065)))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS pushpipe_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                """,
                logger: logger
            )
            var applied = Set<String>()
            for try await name in try await connection.query("SELECT name FROM pushpipe_migrations", logger: logger).decode(String.self) {
                applied.insert(name)
            }
            let unknown = applied.subtracting(migrationNames)
            guard unknown.isEmpty else { throw NewerDatabaseError(unknownMigrations: unknown.sorted()) }
            for migration in migrations where !applied.contains(migration.name) {
                for statement in migration.sql { try await connection.query(statement, logger: logger) }
                try await connection.query("INSERT INTO pushpipe_migrations (name) VALUES (\(migration.name))", logger: logger)
                logger.notice("store: applied migration \(migration.name)")
            }
        }
    }

    /// The core's `NewerStoreError`, by the name this store's callers know.
    public typealias NewerDatabaseError = NewerStoreError

    /// The migrations applied, in order (for tests and diagnostics). Those of one transaction
    /// share a time, so they are in the order of their version number (v9 before v10).
    public func appliedMigrations() async throws -> [String] {
        try await connections.rows(
            """
            SELECT name FROM pushpipe_migrations ORDER BY applied_at, substring(name from '^v([0-9]+)-')::int, name
            """
        ).decode(String.self)
    }
}
