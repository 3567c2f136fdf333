import Foundation

/// Durable state shared by routes and stages. Most of it is a pipeline's
/// (`pipeline(_:)`, `PipelineStore`): a stage or a route asks its context for that part, so
/// what it may touch shows in its code. Every method is one transaction, so a killed process
/// leaves either the whole change or none of it. The SQLite store is the default; the
/// PostgreSQL store implements the same protocols without touching any stage.
public protocol Store: EventRecordStore, IdempotencyStore {
    /// The pipeline's part: its registrations, records, history, stages' values and work.
    func pipeline(_ name: String) -> any PipelineStore
    /// Keeps an accepted event until its pipeline's `dequeue`, with its answer: committed
    /// before the source answers for it, leased to its `instance` for `event.lease` on
    /// the store's clock.
    func enqueue(_ event: QueuedEvent) async throws
    /// How many events wait, by pipeline and source key: the start's check for events that
    /// no running source will ever claim (a pipeline or source renamed).
    func queuedEventCounts() async throws -> [QueuedEventCount]
    /// Answers when the store does (the readiness check).
    func ping() async throws

    func close() async throws
}

/// Who can be reached (device tokens by user and kind) and what each user chose.
public protocol RegistrationStore: Sendable {
    /// Stores a token. With `replace`, it becomes the only token of its kind (and scope) for the
    /// user; with `keepingAtMost`, the user keeps that many tokens of its kind, in the same
    /// transaction: a client that registers new tokens in a loop cannot make every event fan out
    /// to thousands of them. Kept are this token, then the tokens a delivery reached (confirmed
    /// by `recordOutcome`), then the others, each the most recently registered first: made-up
    /// tokens registered for a real user's id push out each other, not the user's phone.
    func register(_ token: DeviceToken, environment: String?, replace: Bool, keepingAtMost: Int?) async throws
    /// Tokens of one kind: of one user, or of every user when `user` is nil.
    func tokens(user: String?, kind: String) async throws -> [DeviceToken]
    /// Tokens of one kind of the users in `users` (a page of a broadcast), by user.
    func tokens(kind: String, users: ClosedRange<String>) async throws -> [DeviceToken]
    func users() async throws -> [String]
    /// Whether the user has any token registered: one indexed look, whatever the user count.
    func isRegistered(user: String) async throws -> Bool
    /// Registered users in order, after `after` (a page of at most `limit`).
    func users(after: String?, limit: Int) async throws -> [String]
    func users(token: String, kind: String?) async throws -> [String]
    /// Removes a dead token unless it was registered again after `unlessUpdatedAfter` (UNIX seconds).
    /// Returns whether anything was removed.
    func removeToken(kind: String, token: String, unlessUpdatedAfter: Double?) async throws -> Bool

    func setting(user: String, key: String) async throws -> JSON?
    func settings(user: String) async throws -> [String: JSON]
    /// Each of `users`' settings, in their order: a batch's users read at once, for filters that
    /// look each event's user up in turn (`StageContext.settings(user:)`).
    func settings(of users: [String]) async throws -> [[String: JSON]]
    func setSettings(_ values: [String: JSON], user: String) async throws
    /// The settings `keys` of the users in `users` (a page of a broadcast), by user.
    func settings(users: ClosedRange<String>, keys: [String]) async throws -> [String: [String: JSON]]
    /// The distinct texts users set under `keys`, at most `limit` (the zones a broadcast goes out in).
    func settingTexts(keys: [String], limit: Int) async throws -> Set<String>

    /// Reads the tokens of `users` ahead, where a store caches them: a poller's claimed users,
    /// each looked up next. A hint; nothing changes.
    func warmTokens(users: [String]) async throws
}

extension RegistrationStore {
    public func warmTokens(users: [String]) async throws {}

    public func settings(of users: [String]) async throws -> [[String: JSON]] {
        var settings: [[String: JSON]] = []
        for user in users { settings.append(try await self.settings(user: user)) }
        return settings
    }

    public func register(_ token: DeviceToken, environment: String?, replace: Bool) async throws {
        try await register(token, environment: environment, replace: replace, keepingAtMost: nil)
    }
}

/// What each delivery did and what each user was sent (the history and diagnostics routes).
public protocol DeliveryStore: Sendable {
    /// Everything events' deliveries produced, in one transaction: the outcome of each
    /// delivery, the history entries, the state writes to commit with them, and what became
    /// of each event (its record: replaces an earlier record of the same event), the
    /// outcomes its webhooks are to be told of, and the queued events whose processing it ends
    /// (`finishing`: removed as `dequeue` removes them, so an event's final record and its
    /// removal from the queue are one commit, not two), and the work items whose cursor
    /// says how far it got (`progress`: each item's cursor and `createdAt` saved unless another
    /// process holds it, the item added never due and held by nobody if it is not there; a
    /// broadcast's, `WorkQueue+Broadcasts`).
    func recordOutcome(
        deliveries: [DeliveryRow],
        state: [StateWrite],
        events: [EventRecord],
        webhooks: [WebhookOutcome],
        finishing: [Event.QueueItem],
        progress: [WorkItem]
    ) async throws
    func history(user: String, limit: Int, before: Int64?) async throws -> [HistoryEntry]
    func lastDelivery(user: String) async throws -> DeliveryRow?
}

/// Accepted events kept until processed: work items of the pipeline's `WorkQueue`
/// (`QueuedEvent+Work`), leased to the daemon working on them, written in the group commit
/// with the answers and outcomes around them (`Store.enqueue`).
public protocol QueuedEventStore: Sendable {
    /// The event's processing ended (whatever its outcome): it is not sent again. Only if this
    /// process still holds it, or nobody does: one whose lease another daemon took is that daemon's now.
    func dequeue(source: String, key: String) async throws
    /// Moves a source's queued events and poll schedule from one key to another (the keys by
    /// position of earlier versions, `sources[0]`, to the source's stable key). Only the events
    /// a claim under `from` with `lease` would take move: a daemon of an earlier version that
    /// still runs keeps sending what it holds, and what it lets go of moves at a later call.
    /// Returns how many queued events moved.
    func renameSource(from: String, to: String, lease: Duration) async throws -> Int
}

/// A stage's own durable values (watermarks, by stage and key) and the holds on keys whose
/// notification is on its way.
public protocol StageStateStore: Sendable {
    /// Several keys in one read (a watermark per game of a user).
    func states(stage: String, keys: [String]) async throws -> [String: JSON]
    func setState(_ writes: [StateWrite]) async throws

    /// Holds a stage's keys while their notification is on its way (a watermark's items in
    /// backoff): returns the keys nobody holds. Held by another task of this process, or on a
    /// shared database by another daemon, a key is not returned. Released by `release`, or
    /// after `lease` (a daemon that died). By default taken keys of the pipeline's work
    /// queue, one kind per stage (`PipelineStore`).
    func hold(keys: Set<String>, stage: String, lease: Duration) async throws -> Set<String>
    func release(keys: Set<String>, stage: String) async throws
    /// Extends this process's holds among `keys` to `lease` from now (the store's clock):
    /// a holder renews while its notification is on its way, so the holds of a daemon that died
    /// lapse within a lease instead of outlasting every delivery's retries.
    func renewHolds(keys: Set<String>, stage: String, lease: Duration) async throws
}

extension StageStateStore {
    public func state(stage: String, key: String) async throws -> JSON? { try await states(stage: stage, keys: [key])[key] }
}

/// What the retention pruner removes, a bounded batch per call.
public protocol RetentionStore: Sendable {
    /// Deletes at most `limit` of the pipeline's oldest delivery rows created before `cutoff`
    /// (UNIX seconds), with their history. Returns how many went: fewer than `limit` means done.
    func pruneDeliveries(createdBefore cutoff: Double, limit: Int) async throws -> Int
    /// For the users after `after` (a page of at most `users`), deletes the rows beyond each
    /// one's newest `keep`. Returns the rows deleted and the page's last user (nil: no user left).
    func pruneDeliveries(keepingPerUser keep: Int, usersAfter after: String?, users: Int) async throws -> (deleted: Int, lastUser: String?)
    /// Removes at most `limit` of a stage's values not written since `cutoff` (UNIX seconds):
    /// watermarks of users and items that are gone. Returns how many.
    func pruneStates(stage: String, unchangedSince cutoff: Double, limit: Int) async throws -> Int
    /// Removes at most `limit` of the pipeline's event records not changed since `cutoff`
    /// (UNIX seconds), dead letters excepted: they stay until replayed or dropped. Returns how many.
    func pruneEventRecords(unchangedSince cutoff: Double, limit: Int) async throws -> Int
    /// Removes at most `limit` of the pipeline's idempotency keys past their time to live
    /// (the store's clock). Returns how many.
    func pruneExpiredIdempotencyKeys(limit: Int) async throws -> Int
}

extension DeliveryStore {
    public func recordOutcome(deliveries: [DeliveryRow], state: [StateWrite], events: [EventRecord] = []) async throws {
        try await recordOutcome(deliveries: deliveries, state: state, events: events, webhooks: [], finishing: [])
    }

    public func recordOutcome(deliveries: [DeliveryRow], state: [StateWrite], events: [EventRecord], webhooks: [WebhookOutcome]) async throws {
        try await recordOutcome(deliveries: deliveries, state: state, events: events, webhooks: webhooks, finishing: [])
    }

    public func recordOutcome(
        deliveries: [DeliveryRow],
        state: [StateWrite],
        events: [EventRecord],
        webhooks: [WebhookOutcome],
        finishing: [Event.QueueItem]
    ) async throws {
        try await recordOutcome(deliveries: deliveries, state: state, events: events, webhooks: webhooks, finishing: finishing, progress: [])
    }
}

public struct HistoryEntry: Sendable, Equatable {
    /// Assigned by the store; the `before` cursor of history pagination.
    public var id: Int64?
    public var pipeline: String
    public var user: String
    public var eventID: String
    public var createdAt: Double
    public var record: JSON
    /// `record` serialized already (the notification's payload bytes), so the store need not
    /// serialize it again; `nil` makes the store serialize `record`.
    public var serializedRecord: Data?

    public init(id: Int64? = nil, pipeline: String, user: String, eventID: String, createdAt: Double, record: JSON, serializedRecord: Data? = nil) {
        self.id = id
        self.pipeline = pipeline
        self.user = user
        self.eventID = eventID
        self.createdAt = createdAt
        self.record = record
        self.serializedRecord = serializedRecord
    }

    /// Entries are the same when their content is; how the record was serialized does not count.
    public static func == (lhs: HistoryEntry, rhs: HistoryEntry) -> Bool {
        lhs.id == rhs.id && lhs.pipeline == rhs.pipeline && lhs.user == rhs.user && lhs.eventID == rhs.eventID
            && lhs.createdAt == rhs.createdAt && lhs.record == rhs.record
    }
}
