import Foundation
import Logging
import PostgresNIO

extension PostgresStore {
    /// A group-committed batch on one transaction: its delivery rows and its queued events go
    /// in one statement each (a JSON array unpacked by `jsonb_to_recordset`), since at APNs
    /// rates a round trip per row cost more than everything else.
    static func commit(_ writes: [OutcomeWrite], on connection: PostgresConnection, logger: Logger) async throws {
        var deliveries: [JSON] = []
        var enqueued: [JSON] = []
        var rest: [OutcomeWrite] = []
        for write in writes {
            switch write {
            case .outcome(let records, let history, let state, let pipeline):
                var unattached = history
                for record in records {
                    var text: String?
                    if record.outcome == "delivered", let index = unattached.firstIndex(where: { $0.user == record.user && $0.eventID == record.eventID }) {
                        text = recordText(unattached.remove(at: index))
                    }
                    deliveries.append(row(record, record: text))
                }
                for entry in unattached { deliveries.append(historyRow(entry)) }
                if !state.isEmpty { rest.append(.state(state, pipeline: pipeline)) }
            case .history(let entry):
                deliveries.append(historyRow(entry))
            case .enqueue(let event):
                enqueued.append(["pipeline": .string(event.pipeline), "source": .string(event.source), "instance": .string(event.instance),
                                 "event_id": .string(event.eventID), "user_id": event.user.map(JSON.string) ?? .null, "time": .double(event.time),
                                 "body": .string(event.body.compactText), "lease_until": .double(event.leaseUntil)])
            case .state, .dequeue:
                rest.append(write)
            }
        }
        if !deliveries.isEmpty {
            try await connection.query("""
                INSERT INTO deliveries (pipeline, event_id, user_id, token_kind, token, outcome, reason, provider_id, attempts, created_at, record)
                SELECT pipeline, event_id, user_id, token_kind, token, outcome, reason, provider_id, attempts, created_at, record
                FROM jsonb_to_recordset(\(JSON.array(deliveries).compactText)::jsonb) AS d(
                    pipeline text, event_id text, user_id text, token_kind text, token text, outcome text, reason text,
                    provider_id text, attempts bigint, created_at double precision, record text)
                """, logger: logger)
        }
        if !enqueued.isEmpty {
            try await connection.query("""
                INSERT INTO queued_events (pipeline, source, instance, event_id, user_id, time, body, lease_until)
                SELECT pipeline, source, instance, event_id, user_id, time, body, lease_until
                FROM jsonb_to_recordset(\(JSON.array(enqueued).compactText)::jsonb) AS q(
                    pipeline text, source text, instance text, event_id text, user_id text, time double precision, body text,
                    lease_until double precision)
                """, logger: logger)
        }
        for write in rest { try await apply(write, on: connection, logger: logger) }
    }

    private static func row(_ record: DeliveryRecord, record text: String?) -> JSON {
        ["pipeline": .string(record.pipeline), "event_id": .string(record.eventID), "user_id": .string(record.user),
         "token_kind": .string(record.tokenKind), "token": .string(record.token), "outcome": .string(record.outcome),
         "reason": record.reason.map(JSON.string) ?? .null, "provider_id": record.providerID.map(JSON.string) ?? .null,
         "attempts": .int(Int64(record.attempts)), "created_at": .double(record.createdAt), "record": text.map(JSON.string) ?? .null]
    }

    private static func historyRow(_ entry: HistoryEntry) -> JSON {
        row(DeliveryRecord(pipeline: entry.pipeline, eventID: entry.eventID, user: entry.user, tokenKind: "", token: "", outcome: "history",
                           reason: nil, providerID: nil, attempts: 0, createdAt: entry.createdAt), record: recordText(entry))
    }

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
