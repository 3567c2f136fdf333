import Foundation
import GRDB
import PushPipeCore

extension SQLiteStore {
    public func syncPollSchedule(pipeline: String, source: String, tokenKind: String, interval: Double) async throws {
        let now = Date().timeIntervalSince1970
        try await database.write { db in
            // New users fall due evenly over the interval in the order of their ids, and are
            // stored in that order. A claim then takes neighbours: it rewrites a page or two of
            // this table instead of one per user (claims keep the order: each makes its users due
            // an interval later), and the checks' watermarks (keyed by user) and history index
            // entries land on neighbouring pages too. Spread at random, each claimed user's
            // watermarks had a leaf of their own: a WAL frame per user and check.
            try db.execute(sql: """
                INSERT INTO poll_schedule (pipeline, source, user_id, due_at)
                SELECT ?4, ?1, user_id, ?2 + (row_number() OVER (ORDER BY user_id) - 1) * ?3 / count(*) OVER () FROM (
                    SELECT DISTINCT r.user_id FROM registrations AS r WHERE r.pipeline = ?4 AND r.token_kind = ?5
                    AND NOT EXISTS (SELECT 1 FROM poll_schedule AS s WHERE s.pipeline = ?4 AND s.source = ?1 AND s.user_id = r.user_id))
                ORDER BY user_id
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
            guard !due.isEmpty else { return (due, [TokenCache.Query: [DeviceToken]]()) }
            // One statement for the whole claim, not one per user: per row, binding and
            // stepping a statement cost more than SQLite's own work (a fifth of the writer's
            // time in an OGS check).
            let users = JSON.array(due.map(JSON.string)).compactText
            // OR FAIL: the statement cannot fail (it only moves a time), and a statement that
            // may not be rolled back half-way needs no statement journal, which spilled to a
            // temporary file of its own for each claim.
            try db.cachedStatement(sql: """
                UPDATE OR FAIL poll_schedule SET due_at = ? WHERE pipeline = ? AND source = ? AND user_id IN (SELECT value FROM json_each(?))
                """).execute(arguments: [now + interval, pipeline, source, users])
            return (due, try Self.tokens(of: users, pipeline: pipeline, in: db))
        }
        tokenCache.store(tokens, readAt: generation)
        return due
    }

    /// The tokens of `users` (a JSON array of ids) by user and kind, each list ordered as
    /// `tokens(pipeline:user:kind:)` orders it. Sorted here, and only lists of two or more: an
    /// ORDER BY built a temporary b-tree for every claim, while a user rarely has two tokens of
    /// a kind. CROSS JOIN keeps the claimed list outside: the planner
    /// otherwise scanned every registration of the pipeline for each claim.
    static func tokens(of users: String, pipeline: String, in db: Database) throws -> [TokenCache.Query: [DeviceToken]] {
        let rows = try Row.fetchCursor(db.cachedStatement(sql: """
            SELECT r.user_id, r.token_kind, r.token, r.scope, r.updated_at FROM json_each(?) AS claimed
            CROSS JOIN registrations AS r ON r.pipeline = ? AND r.user_id = claimed.value
            """), arguments: [users, pipeline])
        var found: [TokenCache.Query: [DeviceToken]] = [:]
        while let row = try rows.next() {
            let token = token(row)
            found[TokenCache.Query(pipeline: pipeline, user: token.user, kind: token.kind), default: []].append(token)
        }
        for (query, tokens) in found where tokens.count > 1 {
            found[query] = tokens.sorted { $0.updatedAt > $1.updatedAt }
        }
        return found
    }
}
