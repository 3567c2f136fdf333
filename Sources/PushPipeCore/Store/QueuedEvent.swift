import Foundation

/// An event a source accepted and answered for (HTTP 202) but that is not processed yet.
/// It stays in the store until its processing ends, so a daemon killed in between sends it
/// after the restart instead of losing it: a work item (`QueuedEvent+Work`), leased like any.
public struct QueuedEvent: Sendable, Equatable {
    public var pipeline: String
    /// The source's key (its `key`, or its type): the source that accepted it sends it again.
    public var source: String
    /// The process whose lease it is under (`QueuedEvent.thisProcess`): that process works on
    /// it and renews the lease; once the lease lapses, any process may claim it.
    public var instance: String
    public var eventID: String
    /// Its work item's key: the event id and a nonce, since a backend may reuse an id (against
    /// `id_field`'s rule) and each event it sent must still wait on its own.
    public var key: String
    public var user: String?
    /// When it was accepted (UNIX seconds): templates see the original time after a restart.
    public var time: Double
    public var body: JSON
    /// How long it stays with `instance` without a renewal, counted on the store's
    /// clock from when it is stored or claimed: then another daemon on the same database, or
    /// this one, takes it over. Never a time read here: daemons' clocks disagree.
    public var lease: Duration
    /// The answer given for it, kept under the request's idempotency key in the same
    /// transaction: a request sent again gets it whenever the event was stored, never a
    /// second event.
    public var answer: IdempotentAnswer?
    /// Who posted it (`Event.caller`).
    public var caller: String?
    /// The dead letter it replays: only that record's unresolved recipients get it again.
    public var replayOf: EventRecord?
    /// Which users a broadcast goes to (`Event.audience`); a replay's is its dead letter's.
    public var audience: Audience?
    /// The caller's W3C `traceparent`, kept so that an event sent after a restart still
    /// continues the caller's trace.
    public var traceParent: String?
    /// A held event's (`EventHold`): the source that accepted it, and the holds it waited out.
    public var origin: String?
    public var holds: [PassedHold] = []
    /// Set for a held event: it is stored held by nobody and due this long after it is stored,
    /// on the store's clock (its `instance` and `lease` are then unused).
    public var dueIn: Duration?
    /// The queued item this one takes the place of, removed in the same transaction (a held
    /// event replacing the accepted one it came from). Not stored.
    public var replacing: Event.QueueItem?

    public init(
        pipeline: String,
        source: String,
        instance: String = QueuedEvent.thisProcess,
        eventID: String,
        user: String?,
        time: Double,
        body: JSON,
        lease: Duration = .zero
    ) {
        self.pipeline = pipeline
        self.source = source
        self.instance = instance
        self.eventID = eventID
        self.key = Self.key(eventID: eventID)
        self.user = user
        self.time = time
        self.body = body
        self.lease = lease
    }

    /// Identifies this process among the runs that used the store.
    public static var thisProcess: String { LeaseOwner.thisProcess }

    public var event: Event {
        var event = Event(id: eventID, pipeline: pipeline, user: user, time: Date(timeIntervalSince1970: time), body: body)
        event.source = replayOf?.source ?? origin ?? source
        event.holds = holds
        event.queueItem = Event.QueueItem(source: source, key: key)
        event.caller = caller
        event.replayOf = replayOf
        event.traceParent = traceParent
        event.audience = audience ?? replayOf?.input?.audience
        return event
    }
}

/// The events waiting for one source of one pipeline.
public struct QueuedEventCount: Sendable, Equatable {
    public var pipeline: String
    public var source: String
    public var count: Int

    public init(pipeline: String, source: String, count: Int) {
        self.pipeline = pipeline
        self.source = source
        self.count = count
    }
}

extension QueuedEvent {
    /// `replayOf` as stores keep it, a column of JSON text.
    public static func storedReplay(_ record: EventRecord) -> String {
        // A replay is rare: its record is parsed back to add the two columns' values.
        var stored = (try? JSON.parse(record.storedText))?.objectValue ?? [:]
        stored["state"] = .string(record.state.rawValue)
        stored["updated_at"] = .double(record.updatedAt)
        return JSON.object(stored).compactText
    }

    public static func replay(stored text: String, pipeline: String, eventID: String) throws -> EventRecord {
        let stored = try JSON.parse(text)
        return try EventRecord(
            pipeline: pipeline,
            eventID: eventID,
            state: stored["state"]?.stringValue ?? "",
            updatedAt: stored["updated_at"]?.doubleValue ?? 0,
            stored: stored
        )
    }
}
