import Foundation
import GRDB
import PushPipeCore

/// Tokens the daemon has delivered to are confirmed, and eviction spares them: anonymous
/// registrations of made-up tokens for a real user's id push out each other, not the phone
/// that has been receiving the user's notifications.
extension SQLiteStore {
    /// Keeps `keeping` tokens of the user and kind: the one just registered, then confirmed
    /// ones before unconfirmed ones, each the most recently registered first. So a confirmed
    /// token goes only when every other kept token is confirmed too.
    static func evict(beside token: DeviceToken, pipeline: String, keeping: Int, in db: Database) throws {
        try db.execute(
            sql: """
                DELETE FROM registrations WHERE pipeline = ?1 AND user_id = ?2 AND token_kind = ?3 AND token <> ?4 AND token NOT IN (
                    SELECT token FROM registrations WHERE pipeline = ?1 AND user_id = ?2 AND token_kind = ?3 AND token <> ?4
                    ORDER BY confirmed_at IS NULL, updated_at DESC, created_at DESC LIMIT ?5)
                """,
            arguments: .storable([pipeline, token.user, token.kind, token.value, keeping - 1])
        )
    }

    /// Marks the tokens of a commit's deliveries confirmed, in its transaction: a mark is there
    /// exactly when the delivery row that earned it is. A token marked already is left alone.
    static func markConfirmed(_ keys: [ConfirmedTokens.Key], at now: Double, in db: Database) throws {
        guard !keys.isEmpty else { return }
        let statement = try db.cachedStatement(
            sql: """
                UPDATE registrations SET confirmed_at = ? WHERE pipeline = ? AND user_id = ? AND token_kind = ? AND token = ? AND confirmed_at IS NULL
                """
        )
        for key in keys {
            try statement.execute(arguments: .storable([now, key.pipeline, key.user, key.kind, key.token]))
        }
    }
}
