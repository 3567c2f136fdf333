import Foundation
import Logging
import PostgresNIO

extension PostgresStore {
    /// One write of a group-committed batch, on the batch's transaction. As in SQLite, a
    /// delivered row carries the user's history record for the event.
    static func apply(_ write: OutcomeWrite, on connection: PostgresConnection, logger: Logger) async throws {
        switch write {
        case .history(let entry):
            try await insertDelivery(DeliveryRecord(pipeline: entry.pipeline, eventID: entry.eventID, user: entry.user, tokenKind: "", token: "",
                                                    outcome: "history", reason: nil, providerID: nil, attempts: 0, createdAt: entry.createdAt),
                                     record: recordText(entry), on: connection, logger: logger)
        case .state(let writes, let pipeline):
            let now = Date().timeIntervalSince1970
            for write in writes {
                try await connection.query("""
                    INSERT INTO stage_state (pipeline, stage, key, value, updated_at) VALUES (\(pipeline), \(write.stage), \(write.key), \(write.value.compactText), \(now))
                    ON CONFLICT (pipeline, stage, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                    WHERE NOT \(write.onlyForward) OR stage_state.value::double precision < excluded.value::double precision
                    """, logger: logger)
            }
        case .outcome(let deliveries, let history, let state, let pipeline):
            var unattached = history
            for record in deliveries {
                var text: String?
                if record.outcome == "delivered", let index = unattached.firstIndex(where: { $0.user == record.user && $0.eventID == record.eventID }) {
                    text = recordText(unattached.remove(at: index))
                }
                try await insertDelivery(record, record: text, on: connection, logger: logger)
            }
            for entry in unattached { try await apply(.history(entry), on: connection, logger: logger) }
            try await apply(.state(state, pipeline: pipeline), on: connection, logger: logger)
        case .enqueue(let event):
            try await connection.query("""
                INSERT INTO queued_events (pipeline, source, instance, event_id, user_id, time, body, lease_until)
                VALUES (\(event.pipeline), \(event.source), \(event.instance), \(event.eventID), \(event.user), \(event.time), \(event.body.compactText),
                        \(event.leaseUntil))
                """, logger: logger)
        case .dequeue(let pipeline, let eventID):
            // One row: a backend that reuses an event id keeps its other events queued.
            try await connection.query("""
                DELETE FROM queued_events WHERE id = (SELECT id FROM queued_events WHERE pipeline = \(pipeline) AND event_id = \(eventID) ORDER BY id LIMIT 1)
                """, logger: logger)
        }
    }

    private static func recordText(_ entry: HistoryEntry) -> String {
        entry.serializedRecord.map { String(decoding: $0, as: UTF8.self) } ?? entry.record.compactText
    }

    private static func insertDelivery(_ record: DeliveryRecord, record text: String?, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("""
            INSERT INTO deliveries (pipeline, event_id, user_id, token_kind, token, outcome, reason, provider_id, attempts, created_at, record)
            VALUES (\(record.pipeline), \(record.eventID), \(record.user), \(record.tokenKind), \(record.token), \(record.outcome), \(record.reason),
                    \(record.providerID), \(Int64(record.attempts)), \(record.createdAt), \(text))
            """, logger: logger)
    }
}
