import GRDB
import PushPipeCore

extension SQLiteStore {
    /// Versioned schema. Never edit a shipped migration: add the next one.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-registrations-settings-state") { db in
            try db.execute(
                sql: """
                    CREATE TABLE registrations (
                        pipeline TEXT NOT NULL,
                        user_id TEXT NOT NULL,
                        token_kind TEXT NOT NULL,
                        token TEXT NOT NULL,
                        created_at DOUBLE NOT NULL,
                        updated_at DOUBLE NOT NULL,
                        PRIMARY KEY (pipeline, user_id, token_kind, token)
                    );
                    CREATE INDEX registrations_by_token ON registrations (pipeline, token);
                    CREATE TABLE settings (
                        pipeline TEXT NOT NULL,
                        user_id TEXT NOT NULL,
                        key TEXT NOT NULL,
                        value TEXT NOT NULL,
                        updated_at DOUBLE NOT NULL,
                        PRIMARY KEY (pipeline, user_id, key)
                    );
                    CREATE TABLE stage_state (
                        pipeline TEXT NOT NULL,
                        stage TEXT NOT NULL,
                        key TEXT NOT NULL,
                        value TEXT NOT NULL,
                        updated_at DOUBLE NOT NULL,
                        PRIMARY KEY (pipeline, stage, key)
                    );
                    """
            )
        }
        migrator.registerMigration("v2-history-deliveries") { db in
            try db.execute(
                sql: """
                    CREATE TABLE history (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        pipeline TEXT NOT NULL,
                        user_id TEXT NOT NULL,
                        event_id TEXT NOT NULL,
                        created_at DOUBLE NOT NULL,
                        record TEXT NOT NULL
                    );
                    CREATE INDEX history_by_user ON history (pipeline, user_id, id);
                    CREATE TABLE deliveries (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        pipeline TEXT NOT NULL,
                        event_id TEXT NOT NULL,
                        user_id TEXT NOT NULL,
                        token_kind TEXT NOT NULL,
                        token TEXT NOT NULL,
                        outcome TEXT NOT NULL,
                        reason TEXT,
                        provider_id TEXT,
                        attempts INTEGER NOT NULL,
                        created_at DOUBLE NOT NULL
                    );
                    CREATE INDEX deliveries_by_user ON deliveries (pipeline, user_id, id);
                    """
            )
        }
        migrator.registerMigration("v3-token-scope-environment") { db in
            // Live Activity update tokens are one per activity: the scope is the activity id.
            try db.execute(
                sql: """
                    ALTER TABLE registrations ADD COLUMN scope TEXT NOT NULL DEFAULT '';
                    ALTER TABLE registrations ADD COLUMN environment TEXT;
                    """
            )
        }
        migrator.registerMigration("v4-history-in-deliveries") { db in
            // History records move into the delivery row they belong to: one row and one
            // index entry per notification instead of two of each, so fewer writes at APNs
            // rates. Earlier history rows become rows of outcome `history`.
            try db.execute(
                sql: """
                    ALTER TABLE deliveries ADD COLUMN record TEXT;
                    INSERT INTO deliveries (pipeline, event_id, user_id, token_kind, token, outcome, reason, provider_id, attempts, created_at,
                    record)
                        SELECT pipeline, event_id, user_id, '', '', 'history', NULL, NULL, 0, created_at, record FROM history ORDER BY id;
                    DROP TABLE history;
                    """
            )
        }
        migrator.registerMigration("v5-deferred-user-index") { db in
            // The per-user index becomes a table filled in sorted batches (see
            // `SQLiteStore+UserIndex`): rows after `indexed_through` are found by a scan of the
            // table's tail. Every row was indexed until now, so the tail starts empty.
            try db.execute(
                sql: """
                    CREATE TABLE user_deliveries (
                        pipeline TEXT NOT NULL,
                        user_id TEXT NOT NULL,
                        id INTEGER NOT NULL,
                        PRIMARY KEY (pipeline, user_id, id)
                    ) WITHOUT ROWID;
                    INSERT INTO user_deliveries (pipeline, user_id, id) SELECT pipeline, user_id, id FROM deliveries ORDER BY pipeline, user_id, id;
                    DROP INDEX deliveries_by_user;
                    CREATE TABLE user_index_state (indexed_through INTEGER NOT NULL);
                    INSERT INTO user_index_state (indexed_through) SELECT coalesce(max(id), 0) FROM deliveries;
                    """
            )
        }
        migrator.registerMigration("v6-queued-events") { db in
            try db.execute(
                sql: """
                    CREATE TABLE queued_events (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        pipeline TEXT NOT NULL,
                        source TEXT NOT NULL,
                        instance TEXT NOT NULL,
                        event_id TEXT NOT NULL,
                        user_id TEXT,
                        time DOUBLE NOT NULL,
                        body TEXT NOT NULL
                    );
                    CREATE INDEX queued_events_by_event ON queued_events (pipeline, event_id);
                    """
            )
        }
        migrator.registerMigration("v7-queued-event-leases") { db in
            // Until when an accepted event stays with the process that holds it (see `Store.claimQueuedEvents`).
            try db.execute(sql: "ALTER TABLE queued_events ADD COLUMN lease_until DOUBLE NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v8-poll-schedule") { db in
            try db.execute(
                sql: """
                    CREATE TABLE poll_schedule (
                        pipeline TEXT NOT NULL, source TEXT NOT NULL, user_id TEXT NOT NULL, due_at DOUBLE NOT NULL,
                        PRIMARY KEY (pipeline, source, user_id));
                    CREATE INDEX poll_schedule_by_due ON poll_schedule (pipeline, source, due_at);
                    """
            )
        }
        migrator.registerMigration("v9-idempotency-keys") { db in
            // One row per key a request carried (`IdempotencyStore`): its answer once stored,
            // until then the hold of the request storing it.
            try db.execute(
                sql: """
                    CREATE TABLE idempotency_keys (
                        pipeline TEXT NOT NULL, scope TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL,
                        status INTEGER, body TEXT, held_until DOUBLE NOT NULL, expires_at DOUBLE NOT NULL,
                        PRIMARY KEY (pipeline, scope, key));
                    CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (pipeline, expires_at);
                    """
            )
        }
        migrator.registerMigration("v10-event-records") { db in
            // What became of each event (`EventRecordStore`): one row per event, its state and
            // time as columns, the rest as JSON. `created_at` stays as first written, so rows are
            // in time order (pruned by binary search, like deliveries); dead letters have an index.
            try db.execute(
                sql: """
                    CREATE TABLE event_records (
                        pipeline TEXT NOT NULL, event_id TEXT NOT NULL, state TEXT NOT NULL, created_at DOUBLE NOT NULL,
                        updated_at DOUBLE NOT NULL, record TEXT NOT NULL,
                        PRIMARY KEY (pipeline, event_id));
                    CREATE INDEX event_records_dead_letters ON event_records (updated_at) WHERE state = 'dead_letter';
                    ALTER TABLE queued_events ADD COLUMN caller TEXT;
                    ALTER TABLE queued_events ADD COLUMN replay_of TEXT;
                    """
            )
        }
        migrator.registerMigration("v11-webhook-outbox") { db in
            // Outcomes waiting for a webhook (`WebhookOutboxStore`), claimed like queued events.
            try db.execute(
                sql: """
                    CREATE TABLE webhook_outbox (
                        id INTEGER PRIMARY KEY AUTOINCREMENT, pipeline TEXT NOT NULL, target TEXT NOT NULL, outcome_id TEXT NOT NULL,
                        payload TEXT NOT NULL, created_at DOUBLE NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_at DOUBLE NOT NULL,
                        lease_until DOUBLE NOT NULL DEFAULT 0);
                    CREATE INDEX webhook_outbox_due ON webhook_outbox (pipeline, next_at);
                    """
            )
        }
        migrator.registerMigration("v12-queued-trace-parent") { db in
            // The caller's W3C traceparent: an event sent after a restart still continues its trace.
            try db.execute(sql: "ALTER TABLE queued_events ADD COLUMN trace_parent TEXT")
        }
        migrator.registerMigration("v13-webhook-batches") { db in
            // The batch (`webhook-id`) each waiting outcome is sent in, fixed by its first claim,
            // so a retry sends the same outcomes under the same id.
            try db.execute(
                sql: """
                    ALTER TABLE webhook_outbox ADD COLUMN batch TEXT;
                    CREATE INDEX webhook_outbox_batches ON webhook_outbox (pipeline, batch) WHERE batch IS NOT NULL;
                    """
            )
        }
        migrator.registerMigration("v14-registration-confirmed") { db in
            // When the daemon first delivered to a token (`ConfirmedTokens`): eviction by
            // `max_tokens_per_user` removes tokens nobody has received anything on first.
            try db.execute(sql: "ALTER TABLE registrations ADD COLUMN confirmed_at DOUBLE")
        }
        migrator.registerMigration("v15-idempotency-holder") { db in
            // Which request holds an unanswered key: a failed request releases only its own hold.
            try db.execute(sql: "ALTER TABLE idempotency_keys ADD COLUMN holder TEXT NOT NULL DEFAULT ''")
        }
        migrator.registerMigration("v16-work") { db in
            // Durable work of every kind in one table (`WorkQueue`); webhook outcomes first,
            // moved from their own table with their batch, attempts and due time.
            try db.execute(
                sql: """
                    CREATE TABLE work (
                        id INTEGER PRIMARY KEY AUTOINCREMENT, pipeline TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL,
                        due_at DOUBLE NOT NULL, owner TEXT, lease_until DOUBLE NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0,
                        payload TEXT NOT NULL, cursor TEXT, work_group TEXT, created_at DOUBLE NOT NULL);
                    CREATE UNIQUE INDEX work_by_key ON work (pipeline, kind, key);
                    CREATE INDEX work_due ON work (pipeline, kind, due_at);
                    CREATE INDEX work_groups ON work (pipeline, kind, work_group) WHERE work_group IS NOT NULL;
                    INSERT OR IGNORE INTO work (id, pipeline, kind, key, due_at, lease_until, attempts, payload, work_group, created_at)
                        SELECT id, pipeline, 'webhook', target || ' ' || outcome_id, next_at, lease_until, attempts,
                               json_object('target', target, 'outcome_id', outcome_id, 'payload', json(payload)), batch, created_at
                        FROM webhook_outbox ORDER BY id;
                    DROP TABLE webhook_outbox;
                    """
            )
        }
        migrator.registerMigration("v17-poll-work") { db in
            // Pollers' schedules become recurring work items (`WorkQueue.schedule`), one kind per
            // source, in the order they were stored (a claim rewrites neighbouring pages).
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO work (pipeline, kind, key, due_at, payload, created_at)
                        SELECT pipeline, 'poll:' || source, user_id, due_at, '{}', due_at FROM poll_schedule ORDER BY rowid;
                    DROP TABLE poll_schedule;
                    """
            )
        }
        migrator.registerMigration("v18-queued-work") { db in
            // Accepted events become work items (`QueuedEvent+Work`), one kind per source, held
            // as they were.
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO work (pipeline, kind, key, due_at, owner, lease_until, payload, created_at)
                        SELECT pipeline, '\(QueuedEvent.kinds)' || source, event_id || char(10) || 'q-' || id, lease_until, instance, lease_until,
                               json_object('event_id', event_id, 'user', user_id, 'time', time,
                                           'body', CASE WHEN json_valid(body) THEN json(body) ELSE json_object() END, 'caller', caller,
                                           'replay_of', CASE WHEN json_valid(replay_of) THEN json(replay_of) END, 'trace_parent', trace_parent), time
                        FROM queued_events ORDER BY id;
                    DROP TABLE queued_events;
                    """
            )
        }
        return migrator
    }

    public static var migrationNames: [String] { migrator.migrations }
}
