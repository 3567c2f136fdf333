import Foundation

/// Something that happened, on its way through a pipeline.
///
/// The body is plain JSON so that built-in stages and plugins see the same thing; the
/// metadata is what the runtime itself needs (who it is for, when, which pipeline).
public struct Event: Sendable {
    private var storage: CopyOnWrite<Fields>

    public var id: String {
        _read { yield storage.fields.id }
        set { storage.update { $0.id = newValue } }
    }

    public var pipeline: String {
        _read { yield storage.fields.pipeline }
        set { storage.update { $0.pipeline = newValue } }
    }

    /// The recipient user, when the event is for one user; `nil` means "every registered user".
    public var user: String? {
        _read { yield storage.fields.user }
        set { storage.update { $0.user = newValue } }
    }

    public var time: Date {
        _read { yield storage.fields.time }
        set { storage.update { $0.time = newValue } }
    }

    public var body: JSON {
        _read { yield storage.fields.body }
        set { storage.update { $0.body = newValue } }
    }

    /// The source stage that produced it, by id (`sources[0]`) or, once queued, by key: for
    /// metrics and taps, which name it by id.
    public var source: String? {
        _read { yield storage.fields.source }
        set { storage.update { $0.source = newValue } }
    }

    /// Who posted it (`RouteRequest.principal`): only that caller reads its status. nil for
    /// events the daemon found itself (a poll, a file), whose drops leave no record: a poll that
    /// finds nothing new is not a notification.
    public var caller: String? {
        _read { yield storage.fields.caller }
        set { storage.update { $0.caller = newValue } }
    }

    /// The dead letter this event replays: its record's recipients that got it are not sent
    /// it again, and its new record keeps them.
    public var replayOf: EventRecord? {
        _read { yield storage.fields.replayOf }
        set { storage.update { $0.replayOf = newValue } }
    }

    /// The body as the source made it, before filters changed it: what a dead letter keeps.
    public var receivedBody: JSON? {
        _read { yield storage.fields.receivedBody }
        set { storage.update { $0.receivedBody = newValue } }
    }

    /// The caller's W3C `traceparent`: the event's span continues the caller's trace.
    public var traceParent: String? {
        _read { yield storage.fields.traceParent }
        set { storage.update { $0.traceParent = newValue } }
    }

    /// Its span while it is processed (tracing on), and the trace id its record and logs name.
    public var trace: EventTrace? {
        _read { yield storage.fields.trace }
        set { storage.update { $0.trace = newValue } }
    }

    /// State writes to apply only once every delivery of this event was accepted
    /// (watermarks advance after delivery, never before).
    public var commitOnDelivery: [StateWrite] {
        _read { yield storage.fields.commitOnDelivery }
        set { storage.update { $0.commitOnDelivery = newValue } }
    }

    /// The holds it waited out (`EventHold`), oldest first: kept with it in the store while it waits.
    public var holds: [PassedHold] {
        _read { yield storage.fields.holds }
        set { storage.update { $0.holds = newValue } }
    }

    /// The queued item it was taken from (an accepted event, a held one): a hold stores the
    /// event again in the same transaction that removes this item, so a kill between the two
    /// neither loses it nor sends it twice.
    public var queueItem: QueueItem? {
        _read { yield storage.fields.queueItem }
        set { storage.update { $0.queueItem = newValue } }
    }

    /// For an event for every user: which of them it goes to (`Audience`); nil: all.
    public var audience: Audience? {
        _read { yield storage.fields.audience }
        set { storage.update { $0.audience = newValue } }
    }

    /// Other events it carries (a digest's): once its outcome is final, their records follow
    /// it, so each says what became of it rather than waiting in `batched`.
    public var carries: [CarriedEvent] {
        _read { yield storage.fields.carries }
        set { storage.update { $0.carries = newValue } }
    }

    public struct QueueItem: Sendable, Equatable {
        public var source: String
        public var key: String

        public init(source: String, key: String) {
            self.source = source
            self.key = key
        }
    }

    /// Called once with the event's final report: how a source learns its event is done.
    public var onComplete: (@Sendable (EventReport) async -> Void)? {
        // A `get`, unlike the other fields' `_read`: Swift 6.3.1's release build crashes
        // (signal 11 in LLVM's bitcode writer) on a yielded optional async closure.
        get { storage.fields.onComplete }
        set { storage.update { $0.onComplete = newValue } }
    }

    private struct Fields: Sendable {
        var id: String
        var pipeline: String
        var user: String?
        var time: Date
        var body: JSON
        var source: String?
        var caller: String?
        var replayOf: EventRecord?
        var receivedBody: JSON?
        var traceParent: String?
        var trace: EventTrace?
        var commitOnDelivery: [StateWrite] = []
        var holds: [PassedHold] = []
        var queueItem: QueueItem?
        var carries: [CarriedEvent] = []
        var audience: Audience?
        var onComplete: (@Sendable (EventReport) async -> Void)?
    }

    public init(id: String = Event.makeID(), pipeline: String, user: String?, time: Date = Date(), body: JSON) {
        storage = CopyOnWrite(Fields(id: id, pipeline: pipeline, user: user, time: time, body: body))
    }

    /// 24 lower-case hex characters, a MongoDB ObjectId's layout, like the ids Pong's
    /// original backend used: increasing, so the store's records of events stay cheap to add.
    public static func makeID() -> String { RandomIdentifier.objectID() }

    /// The event as plugins and templates see it.
    public var json: JSON {
        .object([
            "id": .string(id),
            "pipeline": .string(pipeline),
            "user": user.map(JSON.string) ?? .null,
            "time": .double(time.timeIntervalSince1970),
            "body": body,
        ])
    }
}

/// A write to a stage's durable state, keyed per pipeline, stage and key.
public struct StateWrite: Sendable, Hashable {
    public var stage: String
    public var key: String
    public var value: JSON
    /// A watermark: written only over a smaller number, never back. Two daemons finishing
    /// deliveries in any order leave the newest.
    public var onlyForward: Bool
    /// Set on a watermark kept per device (`DeliveredDevices`): the devices (`kind:token`)
    /// that got its items already. While only some devices of the event get it, the runtime
    /// writes those beside the watermark instead of moving it, so the next check sends only to
    /// the others. Nil: the watermark is the whole event's.
    public var perDevice: Set<String>?

    public init(stage: String, key: String, value: JSON, onlyForward: Bool = false, perDevice: Set<String>? = nil) {
        self.stage = stage
        self.key = key
        self.value = value
        self.onlyForward = onlyForward
        self.perDevice = perDevice
    }
}
