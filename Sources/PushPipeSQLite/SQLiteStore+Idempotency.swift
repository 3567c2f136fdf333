import Foundation
import GRDB
import PushPipeCore

extension SQLiteStore {
    public func claimIdempotencyKey(
        _ key: IdempotencyKey,
        fingerprint: String,
        holder: String,
        hold: Duration,
        ttl: Duration
    ) async throws -> IdempotencyClaim {
        let now = clock.now
        let arguments: StatementArguments = [key.pipeline, key.scope, key.key]
        return try await database.write { db in
            try db.execute(
                sql: "DELETE FROM idempotency_keys WHERE pipeline = ? AND scope = ? AND key = ? AND expires_at < ?",
                arguments: arguments + [now]
            )
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO idempotency_keys (pipeline, scope, key, fingerprint, holder, held_until, expires_at) VALUES (?, ?, ?, ?, ?,
                    ?, ?)
                    """,
                arguments: arguments + [fingerprint, holder, now + hold.inSeconds, now + ttl.inSeconds]
            )
            if db.changesCount == 1 { return .claimed }
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT fingerprint, status, body, held_until < ? AS lapsed FROM idempotency_keys WHERE pipeline = ? AND scope = ? AND key = ?
                        """,
                    arguments: [now] + arguments
                )
            else { return .inProgress }
            if let claim = try IdempotencyClaim.of(
                stored: row["fingerprint"],
                status: row["status"],
                body: row["body"],
                lapsed: row["lapsed"],
                fingerprint: fingerprint
            ) {
                return claim
            }
            try db.execute(
                sql: """
                    UPDATE idempotency_keys SET fingerprint = ?, holder = ?, held_until = ?, expires_at = ?
                    WHERE pipeline = ? AND scope = ? AND key = ? AND status IS NULL AND held_until < ?
                    """,
                arguments: [fingerprint, holder, now + hold.inSeconds, now + ttl.inSeconds] + arguments + [now]
            )
            return db.changesCount == 1 ? .claimed : .inProgress
        }
    }

    public func recordIdempotentAnswer(_ answer: IdempotentAnswer) async throws {
        try await database.write { db in try Self.recordAnswer(answer, in: db) }
    }

    public func releaseIdempotencyKey(_ key: IdempotencyKey, holder: String) async throws {
        try await database.write { db in
            // Only this request's unanswered hold: an answer stored by a commit that reported
            // failure stays, and so does the hold of a request that took the key over.
            try db.execute(
                sql: "DELETE FROM idempotency_keys WHERE pipeline = ? AND scope = ? AND key = ? AND status IS NULL AND holder = ?",
                arguments: [key.pipeline, key.scope, key.key, holder]
            )
        }
    }

    public func withdrawIdempotencyKey(_ key: IdempotencyKey) async throws {
        try await database.write { db in
            try db.execute(
                sql: "DELETE FROM idempotency_keys WHERE pipeline = ? AND scope = ? AND key = ?",
                arguments: .storable([key.pipeline, key.scope, key.key])
            )
        }
    }

    /// In the transaction that stores the answer's event, when it has one.
    static func recordAnswer(_ answer: IdempotentAnswer, in db: Database) throws {
        try db.cachedStatement(sql: "UPDATE idempotency_keys SET status = ?, body = ? WHERE pipeline = ? AND scope = ? AND key = ?")
            .execute(arguments: [answer.status, answer.body.compactText, answer.key.pipeline, answer.key.scope, answer.key.key])
    }
}

extension SQLitePipelineStore {
    func pruneExpiredIdempotencyKeys(limit: Int) async throws -> Int {
        let now = store.clock.now
        return try await store.database.write { db in
            try db.execute(
                sql: """
                    DELETE FROM idempotency_keys WHERE rowid IN (
                        SELECT rowid FROM idempotency_keys WHERE pipeline = ? AND expires_at < ? LIMIT ?)
                    """,
                arguments: [pipeline, now, limit]
            )
            return db.changesCount
        }
    }
}
