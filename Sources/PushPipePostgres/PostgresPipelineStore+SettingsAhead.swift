import PostgresNIO
import PushPipeCore

extension PostgresPipelineStore {
    /// One statement for a batch's users, instead of a round trip per event as each filter
    /// reads its user's (`SettingsAhead`).
    func settings(of users: [String]) async throws -> [[String: JSON]] {
        guard !users.isEmpty else { return [] }
        try store.connections.refuseReadAheadDuringAnOutage()
        let rows = try await store.connections.rows(
            "SELECT user_id, key, value FROM settings WHERE pipeline = \(pipeline) AND user_id = ANY(\(users))"
        ).decode((String, String, String).self)
        return try [[String: JSON]](users: users, rows: rows) { StoredText.storable($0) }
    }
}
