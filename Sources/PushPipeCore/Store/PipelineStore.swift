/// One pipeline's part of the store: what its stages and routes read and write, without
/// naming the pipeline at every call (`store.pipeline(name)`, `context.registrations`…).
/// A handle, not a copy: every call goes to the store, in one transaction as there.
public struct PipelineStore: Sendable {
    public let name: String
    public let store: any Store

    public init(name: String, store: any Store) {
        self.name = name
        self.store = store
    }

    /// The pipeline's durable work: webhook outcomes, holds, poll schedules, and later kinds.
    public var work: any WorkQueue { store.work(pipeline: name) }

    // MARK: Registrations and settings

    public func register(_ token: DeviceToken, environment: String?, replace: Bool, keepingAtMost: Int? = nil) async throws {
        try await store.register(token, pipeline: name, environment: environment, replace: replace, keepingAtMost: keepingAtMost)
    }
    /// Tokens of one kind: of one user, or of every user when `user` is nil.
    public func tokens(user: String?, kind: String) async throws -> [DeviceToken] { try await store.tokens(pipeline: name, user: user, kind: kind) }
    /// Tokens of one kind of the users in `users` (a page of a broadcast).
    public func tokens(kind: String, users: ClosedRange<String>) async throws -> [DeviceToken] {
        try await store.tokens(pipeline: name, kind: kind, users: users)
    }
    public func users() async throws -> [String] { try await store.users(pipeline: name) }
    public func users(after: String?, limit: Int) async throws -> [String] { try await store.users(pipeline: name, after: after, limit: limit) }
    public func users(token: String, kind: String?) async throws -> [String] { try await store.users(pipeline: name, token: token, kind: kind) }
    public func isRegistered(user: String) async throws -> Bool { try await store.isRegistered(pipeline: name, user: user) }
    public func removeToken(kind: String, token: String, unlessUpdatedAfter: Double?) async throws -> Bool {
        try await store.removeToken(pipeline: name, kind: kind, token: token, unlessUpdatedAfter: unlessUpdatedAfter)
    }
    public func setting(user: String, key: String) async throws -> JSON? { try await store.setting(pipeline: name, user: user, key: key) }
    public func settings(user: String) async throws -> [String: JSON] { try await store.settings(pipeline: name, user: user) }
    public func setSettings(_ values: [String: JSON], user: String) async throws { try await store.setSettings(values, pipeline: name, user: user) }
    /// A hint: reads the tokens of `users` ahead, where the store caches them.
    public func warmTokens(users: [String]) async throws { try await store.warmTokens(pipeline: name, users: users) }

    // MARK: What was sent

    public func history(user: String, limit: Int, before: Int64?) async throws -> [HistoryEntry] {
        try await store.history(pipeline: name, user: user, limit: limit, before: before)
    }
    public func lastDelivery(user: String) async throws -> DeliveryRecord? { try await store.lastDelivery(pipeline: name, user: user) }
    /// The event as its caller sees it (`EventRecordStore.eventStatus`).
    public func eventStatus(eventID: String) async throws -> [EventRecord] { try await store.eventStatus(eventID: eventID, pipeline: name) }

    // MARK: Stages' values and holds

    public func state(stage: String, key: String) async throws -> JSON? { try await store.state(pipeline: name, stage: stage, key: key) }
    public func states(stage: String, keys: [String]) async throws -> [String: JSON] { try await store.states(pipeline: name, stage: stage, keys: keys) }
    public func setState(_ writes: [StateWrite]) async throws { try await store.setState(writes, pipeline: name) }
    public func hold(keys: Set<String>, stage: String, lease: Double) async throws -> Set<String> {
        try await store.hold(keys: keys, pipeline: name, stage: stage, lease: lease)
    }
    public func release(keys: Set<String>, stage: String) async throws { try await store.release(keys: keys, pipeline: name, stage: stage) }
    public func renewHolds(keys: Set<String>, stage: String, lease: Double) async throws {
        try await store.renewHolds(keys: keys, pipeline: name, stage: stage, lease: lease)
    }
    public func pruneStates(stage: String, unchangedSince cutoff: Double, limit: Int) async throws -> Int {
        try await store.pruneStates(pipeline: name, stage: stage, unchangedSince: cutoff, limit: limit)
    }

    // MARK: Accepted events

    public func enqueue(_ event: QueuedEvent) async throws { try await store.enqueue(event) }
    /// At most `limit` of the source's events nobody works on (their lease lapsed: their daemon
    /// died, or let go of them), in the order they were accepted, now this process's for `lease`
    /// seconds. This process's events under a running lease are not returned: its sources hold
    /// them already. An item this version cannot read stays where it is.
    public func claimQueuedEvents(source: String, lease: Double, limit: Int) async throws -> [QueuedEvent] {
        try await work.claim(QueuedEvent.kind(source: source), limit: limit, lease: lease).compactMap { item in
            try? QueuedEvent(work: item, pipeline: name, owner: LeaseOwner.thisProcess, lease: lease)
        }
    }
    /// Extends the leases of this process's events among `keys` (`QueuedEvent.key`); the others lapse.
    public func renewLeases(source: String, keys: Set<String>, lease: Double) async throws {
        try await work.renew(QueuedEvent.kind(source: source), keys: keys, lease: lease)
    }
    /// Ends this process's leases of `keys` at once: the next claim, anywhere, takes them.
    public func releaseLeases(source: String, keys: Set<String>) async throws {
        try await work.release(QueuedEvent.kind(source: source), keys: keys)
    }
    /// The event under `key` (`QueuedEvent.key`) was processed: its item goes.
    public func dequeue(source: String, key: String) async throws { try await store.dequeue(pipeline: name, source: source, key: key) }
}

extension Store {
    /// The pipeline's part of the store.
    public func pipeline(_ name: String) -> PipelineStore { PipelineStore(name: name, store: self) }
}
