/// One pipeline's part of the store (`store.pipeline(name)`): what its stages and routes read
/// and write, without naming the pipeline at every call. A handle, not a copy: every call goes
/// to the store, in one transaction as there. Each store implements it once, as a small value
/// holding the store and the pipeline's name.
public protocol PipelineStore: RegistrationStore, DeliveryStore, QueuedEventStore, StageStateStore, RetentionStore {
    var name: String { get }
    /// The pipeline's durable work: accepted events, webhook outcomes, holds, poll schedules,
    /// and every later kind of leased item.
    var work: any WorkQueue { get }
    /// Removes a dead letter for good; false when there is none of that id.
    func dropDeadLetter(eventID: String) async throws -> Bool
}

extension PipelineStore {
    // MARK: Holds, by default taken keys of the work queue (one kind per stage)

    public func hold(keys: Set<String>, stage: String, lease: Duration) async throws -> Set<String> {
        try await work.take(WorkItem.holdKind(stage: stage), keys: keys, lease: lease)
    }
    public func release(keys: Set<String>, stage: String) async throws { try await work.complete(WorkItem.holdKind(stage: stage), keys: keys) }
    public func renewHolds(keys: Set<String>, stage: String, lease: Duration) async throws {
        try await work.renew(WorkItem.holdKind(stage: stage), keys: keys, lease: lease)
    }

    // MARK: Accepted events

    /// At most `limit` of the source's events nobody works on (their lease lapsed: their daemon
    /// died, or let go of them), in the order they were accepted, now this process's for `lease`.
    /// This process's events under a running lease are not returned: its sources hold
    /// them already. An item this version cannot read stays where it is.
    public func claimQueuedEvents(source: String, lease: Duration, limit: Int) async throws -> [QueuedEvent] {
        try await work.claim(QueuedEvent.kind(source: source), limit: limit, lease: lease).compactMap { item in
            try? QueuedEvent(work: item, pipeline: name, owner: LeaseOwner.thisProcess, lease: lease)
        }
    }
    /// Extends the leases of this process's events among `keys` (`QueuedEvent.key`); the others lapse.
    public func renewLeases(source: String, keys: Set<String>, lease: Duration) async throws {
        try await work.renew(QueuedEvent.kind(source: source), keys: keys, lease: lease)
    }
    /// Ends this process's leases of `keys` at once: the next claim, anywhere, takes them.
    public func releaseLeases(source: String, keys: Set<String>) async throws {
        try await work.release(QueuedEvent.kind(source: source), keys: keys)
    }
}
