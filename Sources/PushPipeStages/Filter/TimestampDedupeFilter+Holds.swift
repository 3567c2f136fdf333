import PushPipeCore
import Synchronization

/// The holds this process's events took: renewed while their notifications are on their way,
/// given back when they end.
///
/// While a hold lasts its items are not notified. A hold is therefore short (`hold`, 30 s)
/// and renewed: the holds of a daemon that died lapse within it, where a hold nobody renews
/// would have to outlast every delivery's retries, and keep those items silent that long after
/// a crash. A release the store refused (an outage, a connection the server closed) is kept
/// and retried, here and at stop, rather than left to the lease.
final class DedupeHolds: Sendable {
    private struct State {
        /// Held by events in flight here.
        var live: Set<String> = []
        /// Given back by their events, refused by the store.
        var unreleased: Set<String> = []
    }

    private let state = Mutex(State())

    var isEmpty: Bool { state.withLock { $0.live.isEmpty && $0.unreleased.isEmpty } }
    var unreleasedCount: Int { state.withLock { $0.unreleased.count } }

    func took(_ keys: Set<String>) { state.withLock { $0.live.formUnion(keys) } }

    /// `keys` but those an event in flight here holds. The store's hold of such a key may have
    /// lapsed (its renewals failed while the store was away): this process still knows the
    /// notification is on its way.
    func notHeldHere(_ keys: Set<String>) -> Set<String> { state.withLock { keys.subtracting($0.live) } }

    /// Releases `keys`, even for an event cancelled at the drain timeout; what the store refused
    /// is kept for `maintain`.
    func release(_ keys: Set<String>, store: any PipelineStore, stage: String) async {
        guard !keys.isEmpty else { return }
        state.withLock { $0.live.subtract(keys) }
        do {
            try await uncancelled { try await store.release(keys: keys, stage: stage) }
        } catch {
            state.withLock { $0.unreleased.formUnion(keys) }
        }
    }

    /// Renews the live holds and retries the refused releases; returns how many releases are
    /// still refused.
    @discardableResult
    func maintain(store: any PipelineStore, stage: String, lease: Duration) async -> Int {
        let (live, unreleased) = state.withLock { state in
            defer { state.unreleased.removeAll() }
            return (state.live, state.unreleased)
        }
        // A renewal that fails is tried again at the next round, well within the lease.
        try? await store.renewHolds(keys: live, stage: stage, lease: lease)
        await release(unreleased, store: store, stage: stage)
        return unreleasedCount
    }
}
