import CoreMetrics
import Synchronization

/// Fans each stage's records out to the taps listening (`pushpipe tap`). Nothing is built
/// while nobody listens; a tap that does not read loses records (counted, and told how many)
/// instead of slowing delivery: each tap has a bounded buffer and publishing never waits.
public final class TapHub: Sendable {
    public struct Filter: Sendable {
        public var pipeline: String?
        public var stage: String?
        public init(pipeline: String? = nil, stage: String? = nil) {
            self.pipeline = pipeline
            self.stage = stage
        }

        func admits(pipeline: String, stage: String) -> Bool {
            (self.pipeline == nil || self.pipeline == pipeline) && (self.stage == nil || self.stage == stage || stage.hasPrefix(self.stage! + "["))
        }
    }

    /// One listening tap: its records, and how many it missed since it last asked.
    public final class Subscription: Sendable {
        public let records: AsyncStream<JSON>
        let continuation: AsyncStream<JSON>.Continuation
        let filter: Filter
        private let missed = Atomic<Int>(0)

        init(filter: Filter, buffer: Int) {
            self.filter = filter
            (records, continuation) = AsyncStream.makeStream(of: JSON.self, bufferingPolicy: .bufferingOldest(buffer))
        }

        /// Wakes the reader with a `null` record (no data), so a writer finds a client that left.
        public func heartbeat() { continuation.yield(.null) }

        /// Records dropped because this tap fell behind, since the last call.
        public func takeMissed() -> Int { missed.exchange(0, ordering: .relaxed) }

        func deliver(_ record: JSON) -> Bool {
            if case .dropped = continuation.yield(record) {
                missed.add(1, ordering: .relaxed)
                return false
            }
            return true
        }
    }

    private let subscribers = Mutex<[ObjectIdentifier: Subscription]>([:])
    private let listening = Atomic<Int>(0)
    private let dropped: CoreMetrics.Counter

    init(dropped: CoreMetrics.Counter) {
        self.dropped = dropped
    }

    public var isListening: Bool { listening.load(ordering: .relaxed) > 0 }

    /// A new tap, or nil when `limit` taps listen already.
    public func subscribe(_ filter: Filter, buffer: Int = 1024, limit: Int = .max) -> Subscription? {
        let subscription = Subscription(filter: filter, buffer: buffer)
        let admitted = subscribers.withLock { subscribers in
            guard subscribers.count < limit else { return false }
            subscribers[ObjectIdentifier(subscription)] = subscription
            return true
        }
        guard admitted else { return nil }
        listening.add(1, ordering: .relaxed)
        subscription.continuation.onTermination = { [weak self] _ in self?.unsubscribe(subscription) }
        return subscription
    }

    public func unsubscribe(_ subscription: Subscription) {
        let removed = subscribers.withLock { $0.removeValue(forKey: ObjectIdentifier(subscription)) != nil }
        if removed { listening.subtract(1, ordering: .relaxed) }
        subscription.continuation.finish()
    }

    /// Builds the record only when a tap listens to this pipeline and stage.
    public func publish(pipeline: String, stage: String, _ record: () -> JSON) {
        guard isListening else { return }
        let targets = subscribers.withLock { $0.values.filter { $0.filter.admits(pipeline: pipeline, stage: stage) } }
        guard !targets.isEmpty else { return }
        let built = record()
        for target in targets where !target.deliver(built) { dropped.increment() }
    }
}
