import Foundation

/// The writes stores group into shared transactions (`GroupCommit`): they arrive from many
/// tasks at once, one or two small rows each.
package enum OutcomeWrite: Sendable {
    case state([StateWrite], pipeline: String)
    case outcome(
        deliveries: [DeliveryRow],
        state: [StateWrite],
        events: [EventRecord],
        webhooks: [WebhookOutcome],
        finishing: [Event.QueueItem],
        progress: [WorkItem],
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
        .enqueue(event, WorkItem(kind: event.kind, key: event.key, payload: .null, createdAt: event.time), payload: event.storedPayload)
    }

    /// Writes nothing: not worth a place in a transaction.
    package var isEmpty: Bool {
        switch self {
        case .state(let writes, _): writes.isEmpty
        case .outcome(let deliveries, let state, let events, let webhooks, let finishing, let progress, _):
            deliveries.isEmpty && state.isEmpty && events.isEmpty && webhooks.isEmpty && finishing.isEmpty && progress.isEmpty
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

/// A row of `deliveries`: an event's delivery, and the user's history record of the event
/// when it is the first delivery to reach them (a notification costs one row and one index
/// entry, not two of each).
public struct DeliveryRow: Sendable {
    public var eventID: String
    public var delivery: Delivery
    public var history: Record?

    public init(eventID: String, delivery: Delivery, history: Record? = nil) {
        self.eventID = eventID
        self.delivery = delivery
        // Free text is bounded here, once for both stores; each store replaces NUL where it binds.
        self.delivery.reason = StoredText.storable(delivery.reason, limit: StoredText.longestFreeText)
        self.delivery.providerID = StoredText.storable(delivery.providerID, limit: StoredText.longestFreeText)
        self.history = history
    }

    /// A history record as the runtime hands it over: a payload already serialized is stored
    /// as those bytes, without becoming a `String` first.
    public enum Record: Sendable {
        case json(JSON)
        case serialized(Data)

        package var text: String {
            switch self {
            case .json(let record): record.compactText
            case .serialized(let bytes): String(decoding: bytes, as: UTF8.self)
            }
        }
    }
}
