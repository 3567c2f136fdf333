import Foundation
import PostgresNIO
import PushPipeCore

extension PostgresStore {
    /// On the database's clock, like every lease: daemons' own clocks may disagree.
    public func claimIdempotencyKey(
        _ key: IdempotencyKey,
        fingerprint: String,
        holder: String,
        hold: Duration,
        ttl: Duration
    ) async throws -> IdempotencyClaim {
        try await connections.withConnection { [logger] connection in
            let now = Self.databaseNow
            try await connection.query(
                """
                DELETE FROM idempotency_keys WHERE pipeline = \(key.pipeline) AND scope = \(key.scope) AND key = \(key.key)
                AND expires_at < \(unescaped: now)
                """,
                logger: logger
            )
            let inserted = try await connection.query(
                """
                INSERT INTO idempotency_keys (pipeline, scope, key, fingerprint, holder, held_until, expires_at)
                VALUES (\(key.pipeline), \(key.scope), \(key.key), \(fingerprint), \(holder), \(unescaped: now) + \(hold), \(unescaped: now) + \(ttl))
                ON CONFLICT DO NOTHING RETURNING key
                """,
                logger: logger
            ).collect()
            if !inserted.isEmpty { return .claimed }
            let rows = try await connection.query(
                """
                SELECT fingerprint, status, body, held_until < \(unescaped: now) FROM idempotency_keys
                WHERE pipeline = \(key.pipeline) AND scope = \(key.scope) AND key = \(key.key)
                """,
                logger: logger
            ).collect()
            guard let (stored, status, body, lapsed) = try rows.decode((String, Int?, String?, Bool).self).first else { return .inProgress }
            if let claim = try IdempotencyClaim.of(stored: stored, status: status, body: body, lapsed: lapsed, fingerprint: fingerprint) {
                return claim
            }
            // Under READ COMMITTED a second daemon taking it over at once waits for this update
            // and then finds the hold running: one of them has it.
            let taken = try await connection.query(
                """
                UPDATE idempotency_keys SET fingerprint = \(fingerprint), holder = \(holder), held_until = \(unescaped: now) + \(hold), expires_at =
                \(unescaped: now) + \(ttl)
                WHERE pipeline = \(key.pipeline) AND scope = \(key.scope) AND key = \(key.key) AND status IS NULL AND held_until < \(unescaped: now)
                RETURNING key
                """,
                logger: logger
            ).collect()
            return taken.isEmpty ? .inProgress : .claimed
        }
    }

    public func recordIdempotentAnswer(_ answer: IdempotentAnswer) async throws {
        try await connections.withConnection { [logger] connection in try await Self.record(answer, on: connection, logger: logger) }
    }

    /// Also in the transaction that stores the answer's event, when it has one.
    static func record(_ answer: IdempotentAnswer, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            UPDATE idempotency_keys SET status = \(answer.status), body = \(answer.body.compactText)
            WHERE pipeline = \(answer.key.pipeline) AND scope = \(answer.key.scope) AND key = \(answer.key.key)
            """,
            logger: logger
        )
    }

    public func releaseIdempotencyKey(_ key: IdempotencyKey, holder: String) async throws {
        _ = try await connections.rows(
            """
            DELETE FROM idempotency_keys WHERE pipeline = \(key.pipeline) AND scope = \(key.scope) AND key = \(key.key) AND status IS NULL
            AND holder = \(holder)
            """
        )
    }

    public func withdrawIdempotencyKey(_ key: IdempotencyKey) async throws {
        _ = try await connections.rows(
            """
            DELETE FROM idempotency_keys WHERE pipeline = \(key.pipeline) AND scope = \(key.scope) AND key = \(key.key)
            """
        )
    }

}

extension PostgresPipelineStore {
    func pruneExpiredIdempotencyKeys(limit: Int) async throws -> Int {
        try await store.connections.rows(
            """
            DELETE FROM idempotency_keys WHERE ctid IN (
                SELECT ctid FROM idempotency_keys WHERE pipeline = \(pipeline) AND expires_at < \(unescaped: PostgresStore.databaseNow) LIMIT
                \(limit))
            RETURNING key
            """
        ).count
    }
}
