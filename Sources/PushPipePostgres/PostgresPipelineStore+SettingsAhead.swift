import PostgresNIO
import PushPipeCore

extension PostgresPipelineStore {
    /// One statement for a batch's users, instead of one round trip per event as each filter
    /// reads its user's (`SettingsAhead`). Rows are matched to users by the bytes stored.
    func settings(of users: [String]) async throws -> [[String: JSON]] {
        guard !users.isEmpty else { return [] }
        // During an outage this must not be the statement that waits to learn it has ended:
        // each filter's read after it would wait again (as `warmTokens`).
        if let failing = store.connections.availability.failingFor {
            throw StoreUnavailableError(store: store.connections.name, failingFor: failing)
        }
        let rows = try await store.connections.rows(
            "SELECT user_id, key, value FROM settings WHERE pipeline = \(pipeline) AND user_id = ANY(\(users))"
        ).decode((String, String, String).self)
        var byUser: [[UInt8]: [(String, String)]] = [:]
        for (user, key, value) in rows { byUser[Array(user.utf8), default: []].append((key, value)) }
        return try users.map { try [String: JSON](parsing: byUser[Array(StoredText.storable($0).utf8)] ?? []) }
    }
}
