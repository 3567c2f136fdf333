import PostgresNIO
import PushPipeCore

extension PostgresPipelineStore {
    /// One statement for the users of a batch of events, instead of one round trip per event
    /// as each is rendered: at 20,000 users, reads one by one held delivery to 6,000/s.
    func warmTokens(users: [String]) async throws {
        let users = tokenCache.unwarmed(users, pipeline: pipeline)
        guard !users.isEmpty else { return }
        let generation = tokenCache.currentGeneration()
        let rows = try await store.connections.rows(
            """
            SELECT user_id, token_kind, token, scope, updated_at FROM registrations
            WHERE pipeline = \(pipeline) AND user_id = ANY(\(users)) ORDER BY updated_at DESC
            """
        )
        var found: [TokenCache.Query: [DeviceToken]] = [:]
        for token in try PostgresStore.tokens(rows) {
            found[TokenCache.Query(pipeline: pipeline, user: token.user, kind: token.kind), default: []].append(token)
        }
        tokenCache.store(found, readAt: generation, ofEveryKindFor: users, pipeline: pipeline)
    }
}
