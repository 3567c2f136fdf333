import Foundation
import Logging
import PostgresNIO
import PushPipeCore

/// Tokens the daemon has delivered to are confirmed, and eviction spares them: anonymous
/// registrations of made-up tokens for a real user's id push out each other, not the phone
/// that has been receiving the user's notifications.
extension PostgresStore {
    /// Keeps `keeping` tokens of the user and kind: the one just registered, then confirmed
    /// ones before unconfirmed ones, each the most recently registered first. So a confirmed
    /// token goes only when every other kept token is confirmed too.
    static func evict(beside token: DeviceToken, pipeline: String, keeping: Int, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            DELETE FROM registrations WHERE pipeline = \(pipeline) AND user_id = \(token.user) AND token_kind = \(token.kind)
            AND token <> \(token.value) AND token NOT IN (
                SELECT token FROM registrations WHERE pipeline = \(pipeline) AND user_id = \(token.user) AND token_kind = \(token.kind)
                AND token <> \(token.value) ORDER BY confirmed_at IS NULL, updated_at DESC, created_at DESC LIMIT \(keeping - 1))
            """,
            logger: logger
        )
    }

    /// Marks the tokens of a commit's deliveries confirmed, in its transaction: a mark is there
    /// exactly when the delivery row that earned it is. SKIP LOCKED: a row another transaction
    /// holds (another daemon marking it, a registration) is left to a delivery after this
    /// process's `ConfirmedTokens` started over, so marking never waits, and no two group
    /// commits on a shared database wait for each other's rows in opposite orders.
    static func markConfirmed(_ keys: [ConfirmedTokens.Key], on connection: PostgresConnection, logger: Logger) async throws {
        guard !keys.isEmpty else { return }
        let rows: [JSON] = keys.map { key in
            ["pipeline": .string(key.pipeline), "user_id": .string(key.user), "token_kind": .string(key.kind), "token": .string(key.token)]
        }
        try await connection.query(
            """
            UPDATE registrations SET confirmed_at = \(Date().timeIntervalSince1970) WHERE ctid IN (
                SELECT r.ctid FROM registrations AS r
                JOIN jsonb_to_recordset(\(jsonb: rows)::jsonb) AS c(pipeline text, user_id text, token_kind text, token text)
                ON r.pipeline = c.pipeline AND r.user_id = c.user_id AND r.token_kind = c.token_kind AND r.token = c.token
                WHERE r.confirmed_at IS NULL FOR UPDATE OF r SKIP LOCKED)
            """,
            logger: logger
        )
    }
}
