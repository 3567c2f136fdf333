import Foundation
import GRDB
import PushPipeCore

extension SQLiteStore {
    /// The tokens of `users` (a JSON array of ids) by user and kind, each list ordered as
    /// `tokens(user:kind:)` orders it. Sorted here, and only lists of two or more: an
    /// ORDER BY built a temporary b-tree for every claim, while a user rarely has two tokens of
    /// a kind. CROSS JOIN keeps the claimed list outside: the planner
    /// otherwise scanned every registration of the pipeline for each claim.
    static func tokens(of users: String, pipeline: String, in db: Database) throws -> [TokenCache.Query: [DeviceToken]] {
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT r.user_id, r.token_kind, r.token, r.scope, r.updated_at FROM json_each(?) AS claimed
                    CROSS JOIN registrations AS r ON r.pipeline = ? AND r.user_id = claimed.value
                    """
            ),
            arguments: [users, pipeline]
        )
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

extension SQLitePipelineStore {
    /// On a reader, as each user's own lookup is: the processor warms every batch, which in the
    /// writer would wait behind the group commit and hold the next one.
    func readTokens(ofEveryKindFor users: [String]) async throws -> [TokenCache.Query: [DeviceToken]] {
        let list = JSON.array(users.map(JSON.string)).compactText
        return try await store.read { [pipeline] db in try SQLiteStore.tokens(of: list, pipeline: pipeline, in: db) }
    }
}
