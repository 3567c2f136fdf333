import GRDB
import PushPipeCore

extension SQLitePipelineStore {
    /// One read for a batch's users (`SettingsAhead`), on a reader as each user's own is.
    /// CROSS JOIN keeps the list outside, so each user is one look in the settings' key.
    func settings(of users: [String]) async throws -> [[String: JSON]] {
        guard !users.isEmpty else { return [] }
        let list = JSON.array(users.map(JSON.string)).compactText
        let rows: [(String, String, String)] = try await store.read { [pipeline] db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT s.user_id, s.key, s.value FROM json_each(?) AS wanted
                        CROSS JOIN settings AS s ON s.pipeline = ? AND s.user_id = wanted.value
                        """
                ),
                arguments: [list, pipeline]
            )
            .map { ($0[0], $0[1], $0[2]) }
        }
        return try [[String: JSON]](users: users, rows: rows) { $0 }
    }
}
