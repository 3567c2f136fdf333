import Foundation

/// The writes stores group into shared transactions (`GroupCommit`): they arrive from many
/// tasks at once, one or two small rows each.
package enum OutcomeWrite: Sendable {
    case state([StateWrite], pipeline: String)
    case outcome(
        deliveries: [DeliveryRecord],
        history: [HistoryEntry],
        state: [StateWrite],
        events: [EventRecord],
        webhooks: [WebhookOutcome],
        pipeline: String
    )
    /// Boxed: an event is many times the size of every other case, and each write is moved
    /// through the group commit's queue several times. With its item and the item's payload
    /// as stored, apart (`enqueue(_:)`).
    indirect case enqueue(QueuedEvent, WorkItem, payload: String)
    case dequeue(pipeline: String, kind: String, key: String)

    /// An accepted event's write, its item made and its payload serialized by the task that
    /// submits it: not in the transaction that every waiting write shares.
    package static func enqueue(_ event: QueuedEvent) -> OutcomeWrite {
        var item = event.work
        let payload = item.payload.compactText
        item.payload = .null
        return .enqueue(event, item, payload: payload)
    }

    /// Writes nothing: not worth a place in a transaction.
    package var isEmpty: Bool {
        switch self {
        case .state(let writes, _): writes.isEmpty
        case .outcome(let deliveries, let history, let state, let events, let webhooks, _):
            deliveries.isEmpty && history.isEmpty && state.isEmpty && events.isEmpty && webhooks.isEmpty
        case .enqueue, .dequeue: false
        }
    }
}

extension GroupCommit where Write == OutcomeWrite {
    /// What both stores' write methods do: share a transaction, unless there is nothing to write.
    package func submitUnlessEmpty(_ write: OutcomeWrite) async throws {
        guard !write.isEmpty else { return }
        try await submit(write)
    }
}

/// A row of `deliveries`: a delivery, with the history record it carries, if any.
package struct DeliveryRow {
    package var delivery: DeliveryRecord
    package var record: Record?

    /// A history record as the runtime handed it over: a payload already serialized is stored
    /// as those bytes, without becoming a `String` first.
    package enum Record {
        case text(String)
        case serialized(Data)

        package var text: String {
            switch self {
            case .text(let text): text
            case .serialized(let bytes): String(decoding: bytes, as: UTF8.self)
            }
        }
    }

    /// One row per delivery; a delivered one carries the user's history record for the event,
    /// so a notification costs one row (and one index entry), not two of each. History with no
    /// delivery of its own becomes a row of outcome `history`.
    ///
    /// The runtime lists history in the order of the deliveries, so the first entry not attached
    /// yet is tried first: a search and a removal from the front per delivery cost a broadcast
    /// page of 1,000 half a million comparisons and as many moves.
    package static func rows(deliveries: [DeliveryRecord], history: [HistoryEntry]) -> [DeliveryRow] {
        var attached = [Bool](repeating: false, count: history.count)
        var firstUnattached = 0
        var rows: [DeliveryRow] = []
        rows.reserveCapacity(deliveries.count + history.count)
        for var delivery in deliveries {
            // Free text is bounded here, once for both stores; each store replaces NUL where it binds.
            delivery.reason = StoredText.storable(delivery.reason, limit: StoredText.longestFreeText)
            delivery.providerID = StoredText.storable(delivery.providerID, limit: StoredText.longestFreeText)
            var record: Record?
            if delivery.outcome == DeliveryOutcome.delivered.rawValue,
                let index = history.indices[firstUnattached...].first(where: {
                    !attached[$0] && history[$0].user == delivery.user
                        && history[$0].eventID == delivery.eventID
                })
            {
                attached[index] = true
                record = text(of: history[index])
                while firstUnattached < history.count, attached[firstUnattached] { firstUnattached += 1 }
            }
            rows.append(DeliveryRow(delivery: delivery, record: record))
        }
        for (index, entry) in history.enumerated() where !attached[index] { rows.append(historyOnly(entry)) }
        return rows
    }

    package static func historyOnly(_ entry: HistoryEntry) -> DeliveryRow {
        DeliveryRow(
            delivery: DeliveryRecord(
                pipeline: entry.pipeline,
                eventID: entry.eventID,
                user: entry.user,
                tokenKind: "",
                token: "",
                outcome: "history",
                reason: nil,
                providerID: nil,
                attempts: 0,
                createdAt: entry.createdAt
            ),
            record: text(of: entry)
        )
    }

    private static func text(of entry: HistoryEntry) -> Record {
        entry.serializedRecord.map(Record.serialized) ?? .text(entry.record.compactText)
    }
}
