import PostgresNIO
import PushPipeCore

extension PostgresPipelineStore {
    func readTokens(ofEveryKindFor users: [String]) async throws -> [TokenCache.Query: [DeviceToken]] {
        try store.connections.refuseReadAheadDuringAnOutage()
        let rows = try await store.connections.rows(
            """
            SELECT user_id, token_kind, token, scope, updated_at FROM registrations
            WHERE pipeline = \(pipeline) AND user_id = ANY(\(users)) ORDER BY updated_at DESC, token
            """
        )
        var found: [TokenCache.Query: [DeviceToken]] = [:]
        for token in try PostgresStore.tokens(rows) {
            found[TokenCache.Query(pipeline: pipeline, user: token.user, kind: token.kind), default: []].append(token)
        }
        return found
    }
}
