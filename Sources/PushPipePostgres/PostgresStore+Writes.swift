import Foundation
import Logging
import PostgresNIO
import PushPipeCore

extension PostgresStore {
    /// A group-committed batch on one transaction: its delivery rows, event records and queued
    /// events go in one statement each (columns unpacked by `unnest`, or a JSON array by
    /// `jsonb_to_recordset`), since at APNs rates a round trip per row costs more than
    /// everything else. Their text is made storable where it is bound (`PostgresQuery+StoredText`).
    static func commit(_ writes: [OutcomeWrite], on connection: PostgresConnection, logger: Logger) async throws {
        var outcomeRows = OutcomeRows()
        // Its own statement, after the removals: an accepted event may take the place of an
        // item under its own key.
        var accepted = OutcomeRows()
        var states: [(writes: [StateWrite], pipeline: String)] = []
        var answers: [IdempotentAnswer] = []
        var webhooks: [String: [WebhookOutcome]] = [:]
        for write in writes {
            switch write {
            case .outcome(let rows, let state, let outcomes, let webhookOutcomes, let finishing, let progress, let pipeline):
                if !webhookOutcomes.isEmpty { webhooks[pipeline, default: []] += webhookOutcomes }
                outcomeRows.add(rows, outcomes, finishing: finishing, progress: progress, pipeline: pipeline)
                if !state.isEmpty { states.append((state, pipeline)) }
            case .enqueue(let event, let item, let payload):
                accepted.enqueue(event, item, payload: payload)
                if let answer = event.answer { answers.append(answer) }
                // The item it takes the place of goes in the same transaction.
                if let replaced = event.replacing { outcomeRows.add([], [], finishing: [replaced], pipeline: event.pipeline) }
            case .state(let state, let pipeline):
                states.append((state, pipeline))
            case .dequeue(let pipeline, let kind, let key):
                outcomeRows.finish(pipeline: pipeline, kind: kind, key: key)
            }
        }
        if !outcomeRows.isEmpty {
            _ = try await connection.query(outcomeRows.statement, logger: logger).collect()
        }
        if !accepted.isEmpty {
            _ = try await connection.query(accepted.statement, logger: logger).collect()
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
        try await writeStates(states, on: connection, logger: logger)
    }
}

extension PostgresStore {
    /// A batch that holds delivery rows, event records, removals from queues and accepted events
    /// alone, the common one at APNs rates and while events are posted: one statement, atomic
    /// by itself, instead of a transaction's four round trips.
    static func outcomesOnly(_ writes: [OutcomeWrite]) -> OutcomeRows? {
        var outcomeRows = OutcomeRows()
        for write in writes {
            switch write {
            case .outcome(let rows, let state, let records, let webhooks, let finishing, let progress, let pipeline)
            where state.isEmpty && webhooks.isEmpty:
                outcomeRows.add(rows, records, finishing: finishing, progress: progress, pipeline: pipeline)
            case .dequeue(let pipeline, let kind, let key):
                outcomeRows.finish(pipeline: pipeline, kind: kind, key: key)
            case .enqueue(let event, let item, let payload) where event.answer == nil && event.replacing == nil:
                // An answer is its own statement, and what an event replaces must go before it
                // is inserted (a held copy may have its key): those take the transaction.
                outcomeRows.enqueue(event, item, payload: payload)
            default:
                return nil
            }
        }
        // PostgreSQL runs a statement's inserts before its removals: an item inserted under a key
        // the batch also removes would be skipped, then removed. The transaction removes first.
        guard !outcomeRows.reinsertsAFinishedKey else { return nil }
        return outcomeRows
    }

    /// A row's key as the store keeps it, in bytes: texts that differ only by a NUL are one
    /// row, and texts Swift deems equal (canonically equivalent) but whose bytes differ are two.
    static func storedKey(_ parts: String...) -> [UInt8] {
        var key: [UInt8] = []
        for part in parts {
            key += StoredText.storable(part).utf8
            key.append(0)
        }
        return key
    }
}

/// A batch's delivery rows and event records, and the queued events they finish, and the one
/// statement that writes them all.
struct OutcomeRows {
    var deliveries = DeliveryColumns()
    /// One row per event (ON CONFLICT may not touch a row twice): the last record wins.
    var events: [[UInt8]: EventRecord] = [:]
    /// The work items of the queued events finished, as `(pipeline, kind, key)` columns.
    var finished: (pipeline: [String], kind: [String], key: [String]) = ([], [], [])

    /// Accepted events' items, in the order of their keys (`PostgresWorkQueue.insert`).
    var enqueued: [(event: QueuedEvent, item: WorkItem, payload: String)] = []
    /// Items whose cursor the batch saves, one per key (ON CONFLICT again): the last wins.
    var progress: [[UInt8]: (pipeline: String, item: WorkItem)] = [:]

    var isEmpty: Bool { deliveries.isEmpty && events.isEmpty && finished.key.isEmpty && enqueued.isEmpty && progress.isEmpty }

    mutating func enqueue(_ event: QueuedEvent, _ item: WorkItem, payload: String) {
        enqueued.append((event, item, payload))
    }

    /// Whether an accepted event's item, or one whose cursor is saved, has the key of an item
    /// the batch removes.
    var reinsertsAFinishedKey: Bool {
        guard !enqueued.isEmpty || !progress.isEmpty, !finished.key.isEmpty else { return false }
        let removed = Set(finished.key.indices.map { PostgresStore.storedKey(finished.pipeline[$0], finished.kind[$0], finished.key[$0]) })
        return enqueued.contains { removed.contains(PostgresStore.storedKey($0.event.pipeline, $0.item.kind, $0.item.key)) }
            || !removed.isDisjoint(with: progress.keys)
    }

    mutating func add(
        _ rows: [DeliveryRow],
        _ records: [EventRecord],
        finishing: [Event.QueueItem] = [],
        progress items: [WorkItem] = [],
        pipeline: String
    ) {
        for row in rows { deliveries.append(row, pipeline: pipeline) }
        for record in records { events[PostgresStore.storedKey(record.pipeline, record.eventID)] = record }
        for item in finishing { finish(pipeline: pipeline, kind: QueuedEvent.kind(source: item.source), key: item.key) }
        for item in items { progress[PostgresStore.storedKey(pipeline, item.kind, item.key)] = (pipeline, item) }
    }

    /// Removes a work item this process holds, or nobody does (`QueuedEventStore.dequeue`).
    mutating func finish(pipeline: String, kind: String, key: String) {
        finished.pipeline.append(pipeline)
        finished.kind.append(kind)
        finished.key.append(key)
    }

    /// A record replaces the event's earlier one; `created_at` stays as first written.
    var statement: PostgresQuery {
        let d = deliveries
        let records = Array(events.values)
        // Two statements inserting the same keys wait for each other in one order, never in a cycle.
        let w = enqueued.sorted { ($0.event.pipeline, $0.item.kind, $0.item.key) < ($1.event.pipeline, $1.item.kind, $1.item.key) }
        let c = progress.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map(\.value)
        return """
            WITH d AS (
                INSERT INTO deliveries (pipeline, event_id, user_id, token_kind, token, outcome, reason, provider_id, attempts, created_at, record)
                SELECT * FROM unnest(\(d.pipeline)::text[], \(d.eventID)::text[], \(d.user)::text[], \(d.tokenKind)::text[],
                    \(d.token)::text[], \(d.outcome)::text[], \(NullableArray(d.reason))::text[], \(NullableArray(d.providerID))::text[],
                    \(d.attempts)::bigint[], \(NullableArray(times: d.at))::double precision[], \(NullableArray(d.history))::text[])
            ), e AS (
                INSERT INTO event_records (pipeline, event_id, state, created_at, updated_at, record)
                SELECT p, e, s, u, u, r FROM unnest(\(records.map(\.pipeline))::text[], \(records.map(\.eventID))::text[],
                    \(records.map(\.state.rawValue))::text[], \(NullableArray(times: records.map(\.updatedAt)))::double precision[],
                    \(records.map { String(decoding: $0.storedText, as: UTF8.self) })::text[]) AS e(p, e, s, u, r)
                ON CONFLICT (pipeline, event_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at, record = excluded.record
            ), q AS (
                DELETE FROM work WHERE (owner = \(LeaseOwner.thisProcess) OR owner IS NULL) AND (pipeline, kind, key) IN (
                    SELECT * FROM unnest(\(finished.pipeline)::text[], \(finished.kind)::text[], \(finished.key)::text[]))
            ), w AS (
                INSERT INTO work (pipeline, kind, key, due_at, owner, lease_until, payload, attempts, created_at, work_group, cursor)
                SELECT p, k, y, \(unescaped: PostgresStore.databaseNow) + l, o,
                    CASE WHEN o IS NULL THEN 0 ELSE \(unescaped: PostgresStore.databaseNow) + l END, b, a, c, g, u
                FROM unnest(\(w.map(\.event.pipeline))::text[], \(w.map(\.item.kind))::text[], \(w.map(\.item.key))::text[],
                    \(w.map(\.payload))::text[], \(w.map { Int64($0.item.attempts) })::bigint[], \(NullableArray(times: w.map(\.item.createdAt)))::double precision[],
                    \(NullableArray(w.map(\.item.group)))::text[], \(NullableArray(w.map(\.item.cursor)))::text[],
                    \(w.map { ($0.event.dueIn ?? $0.event.lease).inSeconds })::double precision[],
                    \(NullableArray(w.map { $0.event.dueIn == nil ? $0.event.instance : nil }))::text[]) AS w(p, k, y, b, a, c, g, u, l, o)
                ON CONFLICT (pipeline, kind, key) DO NOTHING
            ), c AS (
                INSERT INTO work (pipeline, kind, key, due_at, payload, created_at, work_group, cursor)
                SELECT p, k, y, \(WorkItem.neverDue), b, t, g, u
                FROM unnest(\(c.map(\.pipeline))::text[], \(c.map(\.item.kind))::text[], \(c.map(\.item.key))::text[],
                    \(c.map(\.item.payload.compactText))::text[], \(NullableArray(times: c.map(\.item.createdAt)))::double precision[],
                    \(NullableArray(c.map(\.item.group)))::text[], \(NullableArray(c.map(\.item.cursor)))::text[]) AS c(p, k, y, b, t, g, u)
                ON CONFLICT (pipeline, kind, key) DO UPDATE SET cursor = excluded.cursor, created_at = excluded.created_at
                WHERE work.owner IS NULL OR work.owner = \(LeaseOwner.thisProcess)
            )
            SELECT 1
            """
    }
}

/// A batch's delivery rows as the columns `unnest` reads.
struct DeliveryColumns {
    var pipeline: [String] = []
    var eventID: [String] = []
    var user: [String] = []
    var tokenKind: [String] = []
    var token: [String] = []
    var outcome: [String] = []
    var reason: [String?] = []
    var providerID: [String?] = []
    var attempts: [Int64] = []
    var at: [Double] = []
    var history: [String?] = []

    var isEmpty: Bool { pipeline.isEmpty }

    mutating func append(_ row: DeliveryRow, pipeline: String) {
        let delivery = row.delivery
        self.pipeline.append(pipeline)
        eventID.append(row.eventID)
        user.append(delivery.user)
        tokenKind.append(delivery.tokenKind)
        token.append(delivery.token)
        outcome.append(delivery.outcome.rawValue)
        reason.append(delivery.reason)
        providerID.append(delivery.providerID)
        attempts.append(Int64(delivery.attempts))
        at.append(delivery.at)
        history.append(row.history?.text)
    }
}
