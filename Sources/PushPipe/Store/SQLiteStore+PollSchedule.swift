import Foundation
import GRDB

extension SQLiteStore {
    public func syncPollSchedule(pipeline: String, source: String, tokenKind: String, interval: Double) async throws {
        let now = Date().timeIntervalSince1970
        try await database.write { db in
            try db.execute(sql: """
                INSERT INTO poll_schedule (pipeline, source, user_id, due_at)
                SELECT DISTINCT pipeline, ?, user_id, ? + (abs(random()) % 1000000) / 1000000.0 * ? FROM registrations
                WHERE pipeline = ? AND token_kind = ? AND true
                ON CONFLICT (pipeline, source, user_id) DO NOTHING
                """, arguments: [source, now, interval * 0.8, pipeline, tokenKind])
            try db.execute(sql: """
                DELETE FROM poll_schedule WHERE pipeline = ? AND source = ?
                AND user_id NOT IN (SELECT user_id FROM registrations WHERE pipeline = ? AND token_kind = ?)
                """, arguments: [pipeline, source, pipeline, tokenKind])
        }
    }

    /// Also reads the claimed users' tokens into the token cache: each check looks them up
    /// next, and a reader connection's pages are stale after every commit (see `StateMirror`),
    /// while the writer's, here, are not. One read for the claim instead of one per user.
    public func claimDueChecks(pipeline: String, source: String, interval: Double, limit: Int) async throws -> [String] {
        let now = Date().timeIntervalSince1970
        let generation = tokenCache.currentGeneration()
        let (due, tokens) = try await database.write { db in
            let due = try String.fetchAll(db.cachedStatement(sql: """
                SELECT user_id FROM poll_schedule WHERE pipeline = ? AND source = ? AND due_at <= ? ORDER BY due_at LIMIT ?
                """), arguments: [pipeline, source, now, limit])
            let claim = try db.cachedStatement(sql: "UPDATE poll_schedule SET due_at = ? WHERE pipeline = ? AND source = ? AND user_id = ?")
            for user in due { try claim.execute(arguments: [now + interval, pipeline, source, user]) }
            return (due, try Self.tokens(of: due, pipeline: pipeline, in: db))
        }
        tokenCache.store(tokens, readAt: generation)
        return due
    }

    /// The users' tokens by kind, each list ordered as `tokens(pipeline:user:kind:)` orders it.
    static func tokens(of users: [String], pipeline: String, in db: Database) throws -> [TokenCache.Query: [DeviceToken]] {
        let statement = try db.cachedStatement(sql: """
            SELECT user_id, token_kind, token, scope, updated_at FROM registrations
            WHERE pipeline = ? AND user_id = ? ORDER BY token_kind, updated_at DESC
            """)
        var found: [TokenCache.Query: [DeviceToken]] = [:]
        for user in users {
            for row in try Row.fetchAll(statement, arguments: [pipeline, user]) {
                let token = token(row)
                found[TokenCache.Query(pipeline: pipeline, user: user, kind: token.kind), default: []].append(token)
            }
        }
        return found
    }
}
