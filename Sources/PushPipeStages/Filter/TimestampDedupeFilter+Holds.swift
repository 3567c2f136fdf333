import PushPipe
import Synchronization

/// The holds an event of this process took and could not give back yet.
///
/// A hold outlives its event by up to `hold` (10 minutes by default) when nobody releases it,
/// and while it lasts the held items are not notified. A release refused by the store (an
/// outage, a connection the server closed) is therefore kept and retried, here and at stop,
/// instead of left to the lease.
final class UnreleasedHolds: Sendable {
    private let keys = Mutex<Set<String>>([])

    var isEmpty: Bool { keys.withLock { $0.isEmpty } }

    /// Releases `keys`, in a task of its own (a cancelled event, at a drain timeout, cannot
    /// reach a pooled connection); what the store refused is kept for `retry`.
    func release(_ keys: Set<String>, store: any Store, pipeline: String, stage: String) async {
        guard !keys.isEmpty else { return }
        do {
            try await Task { try await store.release(keys: keys, pipeline: pipeline, stage: stage) }.value
        } catch {
            self.keys.withLock { $0.formUnion(keys) }
        }
    }

    /// Retries the releases the store refused; returns how many are still kept.
    @discardableResult
    func retry(store: any Store, pipeline: String, stage: String) async -> Int {
        let pending = keys.withLock { keys in
            defer { keys.removeAll() }
            return keys
        }
        await release(pending, store: store, pipeline: pipeline, stage: stage)
        return keys.withLock { $0.count }
    }
}
