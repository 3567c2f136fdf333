import Foundation
import Logging
import Synchronization

/// The accepted events this pipeline holds, whose leases it keeps.
///
/// Only the events this process is really working on are renewed: one it let go of (cancelled
/// at a drain timeout, claimed but not submitted, a submit refused) lapses within a lease and
/// is claimed again, by this process or another, so no accepted event waits for a restart.
/// Renewal runs on its own, as a long-running stage: submissions waiting for room in the
/// pipeline, a graceful stop's drain or a slow claim never hold it up.
public final class QueuedEventLeases: Sendable {
    private struct State {
        /// The keys (`QueuedEvent.key`) of the events in flight here.
        var held: Set<String> = []
        /// Events processed whose removal from the queue failed: still held, retried each round.
        var finished: Set<String> = []
        /// The last time a store operation failed: claims wait a lease after it, so that after an
        /// outage every daemon renews what it holds before any daemon takes over lapsed leases.
        var lastFailure: ContinuousClock.Instant?
        /// A failure this source logged itself (not one the store reported, such as an outage):
        /// its end is logged too.
        var failureLogged = false
    }

    private let state = Mutex(State())

    public init() {}

    public func hold(_ key: String) { state.withLock { _ = $0.held.insert(key) } }

    /// Holds those of `keys` this process does not hold yet and returns whether each was taken.
    /// A claim can return an event that is in flight here (its lease lapsed while the store was
    /// slow, or this process's renewal came late): it must not be started a second time.
    public func holdUnlessHeld(_ keys: [String]) -> [Bool] {
        state.withLock { state in keys.map { state.held.insert($0).inserted } }
    }

    /// The event is no longer this process's concern (removed from the queue, or let go of).
    public func forget(_ key: String) {
        state.withLock { state in
            state.finished.remove(key)
            state.held.remove(key)
        }
    }

    public func finishLater(_ key: String) { state.withLock { _ = $0.finished.insert(key) } }

    /// Lets go of events this process will not finish (cancelled, or not submitted while the
    /// pipeline stops): their leases end now, so the next claim anywhere takes them. In a task
    /// of its own: a cancelled task cannot reach a pooled connection.
    public func letGo(_ keys: [String], store: any PipelineStore, source: String) async {
        keys.forEach(forget)
        _ = try? await uncancelled { try await store.releaseLeases(source: source, keys: Set(keys)) }
    }

    public var heldKeys: Set<String> { state.withLock { $0.held } }
    public var finished: Set<String> { state.withLock { $0.finished } }

    /// Notes a failed store operation; returns whether to log it: the first failure since the
    /// store last answered, unless the store reports it itself (it logs an outage once).
    public func failed(_ error: any Error, now: ContinuousClock.Instant = .now) -> Bool {
        let reportedByStore = StoreAvailability.meansAway(error)
        return state.withLock { state in
            state.lastFailure = now
            guard !state.failureLogged, !reportedByStore else { return false }
            state.failureLogged = true
            return true
        }
    }

    /// Notes that the store answered; returns whether a logged failure ended.
    public func answered() -> Bool {
        state.withLock { state in
            defer { state.failureLogged = false }
            return state.failureLogged
        }
    }

    /// Whether claims may run: no store operation failed within the last `lease`.
    public func mayClaim(lease: Duration, now: ContinuousClock.Instant = .now) -> Bool {
        state.withLock { state in state.lastFailure.map { now - $0 >= lease } ?? true }
    }
}
