import Foundation
import Logging
import PostgresNIO
import PushPipeCore

extension PostgresStore {
    /// A group-committed batch on one transaction: its delivery rows and its queued events go
    /// in one statement each (a JSON array unpacked by `jsonb_to_recordset`), since at APNs
    /// rates a round trip per row costs more than everything else. Their text is made storable
    /// where it is bound (`PostgresQuery+StoredText`).
    static func commit(_ writes: [OutcomeWrite], on connection: PostgresConnection, logger: Logger) async throws {
        var deliveries: [JSON] = []
        var enqueued: [String: [(event: QueuedEvent, item: WorkItem, payload: String)]] = [:]
        var states: [(writes: [StateWrite], pipeline: String)] = []
        var dequeued: [(pipeline: String, kind: String, key: String)] = []
        var answers: [IdempotentAnswer] = []
        var events: [String: JSON] = [:]
        var webhooks: [String: [WebhookOutcome]] = [:]
        for write in writes {
            switch write {
            case .outcome(let rows, let state, let outcomes, let webhookOutcomes, let pipeline):
                if !webhookOutcomes.isEmpty { webhooks[pipeline, default: []] += webhookOutcomes }
                deliveries += rows.map { json($0, pipeline: pipeline) }
                if !state.isEmpty { states.append((state, pipeline)) }
                // One row per event in a statement (ON CONFLICT may not touch a row twice): the last record wins.
                for record in outcomes { events[record.pipeline + "\u{0}" + record.eventID] = json(record) }
            case .enqueue(let event, let item, let payload):
                enqueued[event.pipeline, default: []].append((event, item, payload))
                if let answer = event.answer { answers.append(answer) }
            case .state(let state, let pipeline):
                states.append((state, pipeline))
            case .dequeue(let pipeline, let kind, let key):
                dequeued.append((pipeline, kind, key))
            }
        }
        if !deliveries.isEmpty {
            try await connection.query(
                """
                INSERT INTO deliveries (pipeline, event_id, user_id, token_kind, token, outcome, reason, provider_id, attempts, created_at, record)
                SELECT pipeline, event_id, user_id, token_kind, token, outcome, reason, provider_id, attempts, created_at, record
                FROM jsonb_to_recordset(\(jsonb: deliveries)::jsonb) AS d(
                    pipeline text, event_id text, user_id text, token_kind text, token text, outcome text, reason text,
                    provider_id text, attempts bigint, created_at double precision, record text)
                """,
                logger: logger
            )
        }
        for (pipeline, events) in enqueued {
            try await PostgresWorkQueue.insert(
                events.map(\.item),
                payloads: events.map(\.payload),
                pipeline: pipeline,
                after: events.map(\.event.lease),
                heldBy: events.map(\.event.instance),
                on: connection,
                logger: logger
            )
        }
        if !events.isEmpty {
            // A record replaces the event's earlier one; `created_at` stays as first written.
            try await connection.query(
                """
                INSERT INTO event_records (pipeline, event_id, state, created_at, updated_at, record)
                SELECT pipeline, event_id, state, updated_at, updated_at, record
                FROM jsonb_to_recordset(\(jsonb: Array(events.values))::jsonb) AS e(
                    pipeline text, event_id text, state text, updated_at double precision, record text)
                ON CONFLICT (pipeline, event_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at, record = excluded.record
                """,
                logger: logger
            )
        }
        for (pipeline, outcomes) in webhooks {
            try await PostgresWorkQueue.insert(
                outcomes.map(\.work),
                pipeline: pipeline,
                after: outcomes.map { _ in .zero },
                on: connection,
                logger: logger
            )
        }
        for answer in answers { try await record(answer, on: connection, logger: logger) }
        let now = Date().timeIntervalSince1970
        for (writes, pipeline) in states {
            for write in writes {
                // CASE, not OR: only a watermark's row is read as a number (another row may hold
                // an object, `DeliveredDevices`), and OR does not promise to skip its second half.
                try await connection.query(
                    """
                    INSERT INTO stage_state (pipeline, stage, key, value, updated_at) VALUES (\(pipeline), \(write.stage), \(write.key),
                    \(write.value.compactText), \(now))
                    ON CONFLICT (pipeline, stage, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                    WHERE CASE WHEN \(write.onlyForward) THEN stage_state.value::double precision < excluded.value::double precision ELSE true END
                    """,
                    logger: logger
                )
            }
        }
        if !dequeued.isEmpty {
            try await connection.query(
                """
                DELETE FROM work WHERE (owner = \(LeaseOwner.thisProcess) OR owner IS NULL) AND (pipeline, kind, key) IN (
                    SELECT * FROM unnest(\(dequeued.map(\.pipeline))::text[], \(dequeued.map(\.kind))::text[], \(dequeued.map(\.key))::text[]))
                """,
                logger: logger
            )
        }
    }

    private static func json(_ record: EventRecord) -> JSON {
        [
            "pipeline": .string(record.pipeline), "event_id": .string(record.eventID), "state": .string(record.state.rawValue),
            "updated_at": .double(record.updatedAt), "record": .string(String(decoding: record.storedText, as: UTF8.self)),
        ]
    }

    private static func json(_ row: DeliveryRow, pipeline: String) -> JSON {
        let delivery = row.delivery
        return [
            "pipeline": .string(pipeline), "event_id": .string(row.eventID), "user_id": .string(delivery.user),
            "token_kind": .string(delivery.tokenKind), "token": .string(delivery.token), "outcome": .string(delivery.outcome.rawValue),
            "reason": delivery.reason.map(JSON.string) ?? .null, "provider_id": delivery.providerID.map(JSON.string) ?? .null,
            "attempts": .int(Int64(delivery.attempts)), "created_at": .double(delivery.at),
            "record": row.history.map { .string($0.text) } ?? .null,
        ]
    }
}
