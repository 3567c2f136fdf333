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

    public func claimDueChecks(pipeline: String, source: String, interval: Double, limit: Int) async throws -> [String] {
        let now = Date().timeIntervalSince1970
        return try await database.write { db in
            let due = try String.fetchAll(db.cachedStatement(sql: """
                SELECT user_id FROM poll_schedule WHERE pipeline = ? AND source = ? AND due_at <= ? ORDER BY due_at LIMIT ?
                """), arguments: [pipeline, source, now, limit])
            let claim = try db.cachedStatement(sql: "UPDATE poll_schedule SET due_at = ? WHERE pipeline = ? AND source = ? AND user_id = ?")
            for user in due { try claim.execute(arguments: [now + interval, pipeline, source, user]) }
            return due
        }
    }
}
