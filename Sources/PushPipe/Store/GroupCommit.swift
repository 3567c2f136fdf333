import Synchronization

/// Many small writes, few transactions: callers queue a write and wait for it; whoever finds
/// no commit running becomes the leader and commits everything queued in one transaction.
/// Writes that arrived meanwhile get a leader of their own: the leader hands over to the
/// oldest of them and returns, so under sustained load no caller commits other callers'
/// batches forever (a 202 waiting on it took seconds). Each caller waits for at most the
/// batch in progress and its own. Each returns only once its write committed, so durability
/// is the same as one transaction per write, at a fraction of the cost.
///
/// Under load the leader first waits `gatheringWindow` for more writes: a transaction writes
/// whole pages to the WAL whatever it holds, and at APNs rates batches of two or three wrote
/// 10 KB of WAL per notification. A write arriving alone is committed at once.
final class GroupCommit<Write: Sendable>: Sendable {
    private struct Entry {
        var write: Write
        var isLeader: Bool
        /// Resumed with `true` right away for the leader, with `false` for a follower once its write committed.
        var continuation: CheckedContinuation<Bool, any Error>
    }

    private struct State {
        var pending: [Entry] = []
        var committing = false
        /// Whether the last batch held more than one write: then more are likely on their way.
        var underLoad = false
    }

    private let state = Mutex(State())
    private let commit: @Sendable ([Write]) async throws -> Void
    /// Told how long each transaction took (the store commit latency metric).
    let observer = Mutex<CommitObserver?>(nil)
    static var gatheringWindow: Duration { .milliseconds(2) }

    init(commit: @escaping @Sendable ([Write]) async throws -> Void) {
        self.commit = commit
    }

    func submit(_ write: Write) async throws {
        let isLeader = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
            let leads = state.withLock { state -> Bool in
                let leads = !state.committing
                state.committing = true
                state.pending.append(Entry(write: write, isLeader: leads, continuation: continuation))
                return leads
            }
            if leads { continuation.resume(returning: true) }
        }
        if isLeader { try await lead() }
    }

    /// Commits one batch (which holds the leader's own write), then hands over to the oldest
    /// write that arrived meanwhile; throws if the batch failed.
    private func lead() async throws {
        if state.withLock({ $0.underLoad }) { try? await Task.sleep(for: Self.gatheringWindow) }
        let batch = state.withLock { state -> [Entry] in
            defer { state.pending.removeAll(keepingCapacity: true) }
            state.underLoad = state.pending.count > 1
            return state.pending
        }
        var failure: (any Error)?
        let started = ContinuousClock.now
        do {
            try await commit(batch.map(\.write))
        } catch {
            failure = error
        }
        if let observer = observer.withLock({ $0 }) { observer.observe(ContinuousClock.now - started) }
        for entry in batch where !entry.isLeader {
            if let failure { entry.continuation.resume(throwing: failure) } else { entry.continuation.resume(returning: false) }
        }
        let next = state.withLock { state -> CheckedContinuation<Bool, any Error>? in
            guard !state.pending.isEmpty else {
                state.committing = false
                state.underLoad = false
                return nil
            }
            state.pending[0].isLeader = true
            return state.pending[0].continuation
        }
        next?.resume(returning: true)
        if let failure { throw failure }
    }
}

/// A closure kept in a `Mutex` must sit inside a struct: stored as the mutex's generic value
/// itself, every access converts it between abstraction levels and stores it back wrapped in
/// two more thunks, so each commit made the next call deeper (found by `perf`: 11% of a
/// daemon's CPU in a chain of `Duration` thunks after a minute of load).
struct CommitObserver: Sendable {
    let observe: @Sendable (Duration) -> Void
}
