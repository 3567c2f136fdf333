import NIOCore
import NIOPosix
import Synchronization

/// Many small writes, few transactions: callers queue a write and wait for it; whoever finds
/// no commit running becomes the leader and commits everything queued in one transaction.
/// Writes that arrived meanwhile get a leader of their own: the leader hands over to the
/// oldest of them and returns, so under sustained load no caller commits other callers'
/// batches forever (and keeps a 202 waiting on it). Each caller waits for at most the
/// batch in progress and its own. Each returns only once its write committed, so durability
/// is the same as one transaction per write, at a fraction of the cost.
///
/// Under load the leader first gathers more writes: a transaction writes whole pages to the
/// WAL whatever it holds, and at APNs rates batches of two or three would write several pages
/// of WAL per notification. It waits until as many writes are pending as the last batch held,
/// for at most `gatheringWindow`: HTTP callers waiting for their 202 are all in well before the
/// window ends, and waiting it out would bound ingestion by the window with the CPU left idle.
/// A write arriving alone is committed at once.
///
/// A batch that fails is committed again one write at a time, so a write the store refuses
/// (a value it cannot keep) fails alone instead of failing every write that shared its
/// transaction, where one bad answer from a provider would make every worker's outcome fail for ever.
/// Not when the store is away (`isolates` says no): each write would wait out the outage again.
package final class GroupCommit<Write: Sendable>: Sendable {
    private struct Entry {
        var write: Write
        var isLeader: Bool
        /// Resumed with `true` right away for the leader, with `false` for a follower once its write committed.
        var continuation: CheckedContinuation<Bool, any Error>
    }

    private struct State {
        var pending: [Entry] = []
        var committing = false
        /// How many writes the last batch held: under load about as many are on their way, and
        /// a gathering leader waits for that many.
        var lastBatchSize = 0
        /// The gathering leader, resumed by the write that makes `lastBatchSize` pending.
        var gatherer: CheckedContinuation<Void, Never>?
        /// Counts gatherings, so that a window's timer ends only its own.
        var gathering: UInt64 = 0
        /// Whether a leader took its batch and commits it.
        var inProgress = false
        /// A test waiting for this many writes behind the commit in progress (`pendingWritesReach`).
        var pendingWatch: (count: Int, continuation: CheckedContinuation<Void, Never>)?

        /// The watching test's continuation, taken, once its count is reached.
        mutating func reachedWatch() -> CheckedContinuation<Void, Never>? {
            guard let watch = pendingWatch, inProgress, pending.count >= watch.count else { return nil }
            pendingWatch = nil
            return watch.continuation
        }
    }

    private let state = Mutex(State())
    private let commit: @Sendable ([Write]) async throws -> Void
    /// Told how long each transaction took (the store commit latency metric).
    package let observer = Mutex<CommitObserver?>(nil)
    /// The longest a leader waits for the writes it expects.
    private let gatheringWindow: TimeAmount
    /// Whether a batch that failed with this error is committed again write by write.
    private let isolates: @Sendable (any Error) -> Bool

    package init(
        gatheringWindow: Duration = .milliseconds(2),
        isolates: @escaping @Sendable (any Error) -> Bool = { !StoreAvailability.meansAway($0) && !($0 is CancellationError) },
        commit: @escaping @Sendable ([Write]) async throws -> Void
    ) {
        self.gatheringWindow = TimeAmount(gatheringWindow)
        self.isolates = isolates
        self.commit = commit
    }

    /// Writes queued behind the commit in progress (tests wait for a batch to form).
    var pendingWrites: Int { state.withLock { $0.pending.count } }

    /// Returns once a commit is in progress with at least `count` writes queued behind it: a
    /// test holding a commit knows when it started (0) and when the next batch formed. One
    /// waiter at a time.
    package func pendingWritesReach(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let reached = state.withLock { state in
                state.pendingWatch = (count, continuation)
                return state.reachedWatch()
            }
            reached?.resume()
        }
    }

    package func submit(_ write: Write) async throws {
        let isLeader = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
            let (leads, gathered, watched) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?, CheckedContinuation<Void, Never>?) in
                let leads = !state.committing
                state.committing = true
                state.pending.append(Entry(write: write, isLeader: leads, continuation: continuation))
                let watched = state.reachedWatch()
                guard state.gatherer != nil, state.pending.count >= state.lastBatchSize else { return (leads, nil, watched) }
                defer { state.gatherer = nil }
                return (leads, state.gatherer, watched)
            }
            watched?.resume()
            gathered?.resume()
            if leads { continuation.resume(returning: true) }
        }
        if isLeader { try await lead() }
    }

    /// Commits one batch (which holds the leader's own write), then hands over to the oldest
    /// write that arrived meanwhile; throws what the leader's own write failed with.
    private func lead() async throws {
        if state.withLock({ $0.lastBatchSize > 1 }) { await gather() }
        let (batch, watched) = state.withLock { state -> ([Entry], CheckedContinuation<Void, Never>?) in
            state.lastBatchSize = state.pending.count
            state.inProgress = true
            let batch = state.pending
            state.pending.removeAll(keepingCapacity: true)
            return (batch, state.reachedWatch())
        }
        watched?.resume()
        var failure: (any Error)?
        let started = ContinuousClock.now
        do {
            try await commit(batch.map(\.write))
        } catch {
            failure = error
        }
        if let observer = observer.withLock({ $0 }) { observer.observe(ContinuousClock.now - started) }
        // Failed with several writes: each alone, so that only a write the store refuses fails.
        var failures: [(any Error)?]?
        if batch.count > 1, let failure, isolates(failure) { failures = await isolated(batch.map(\.write)) }
        var own: (any Error)?
        for (index, entry) in batch.enumerated() {
            let entryFailure: (any Error)? = if let failures { failures[index] } else { failure }
            if entry.isLeader {
                own = entryFailure
            } else if let entryFailure {
                entry.continuation.resume(throwing: entryFailure)
            } else {
                entry.continuation.resume(returning: false)
            }
        }
        let next = state.withLock { state -> CheckedContinuation<Bool, any Error>? in
            state.inProgress = false
            guard !state.pending.isEmpty else {
                state.committing = false
                state.lastBatchSize = 0
                return nil
            }
            state.pending[0].isLeader = true
            return state.pending[0].continuation
        }
        next?.resume(returning: true)
        if let own { throw own }
    }

    /// Commits each write in a transaction of its own; returns what each failed with (nil: committed).
    private func isolated(_ writes: [Write]) async -> [(any Error)?] {
        var failures: [(any Error)?] = []
        failures.reserveCapacity(writes.count)
        for write in writes {
            do {
                try await commit([write])
                failures.append(nil)
            } catch {
                failures.append(error)
            }
        }
        return failures
    }

    /// Returns once as many writes are pending as the last batch held, the window has passed or
    /// the leader is cancelled. Only the leader changes `lastBatchSize`, so it holds meanwhile.
    private func gather() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let gathering = state.withLock { state -> UInt64? in
                    // Checked under the lock: a cancellation before the gatherer is stored finds none to resume.
                    if state.pending.count >= state.lastBatchSize || Task.isCancelled { return nil }
                    state.gathering &+= 1
                    state.gatherer = continuation
                    return state.gathering
                }
                guard let gathering else { return continuation.resume() }
                // A scheduled callback ends the window: it costs less than a sleeping task raced
                // against the wait (two child tasks per commit). A leader on a loop (an OGS
                // check's pipeline) uses its own, which wakes no other thread; NIO's group is
                // touched only when a window is needed.
                let loop = MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton.any()
                loop.scheduleTask(in: gatheringWindow) { self.stopGathering(gathering) }
            }
        } onCancel: {
            stopGathering(nil)
        }
    }

    /// Resumes the gathering leader: the window `gathering` ended, or (nil) the leader was cancelled.
    private func stopGathering(_ gathering: UInt64?) {
        state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard gathering == nil || gathering == state.gathering else { return nil }
            defer { state.gatherer = nil }
            return state.gatherer
        }?.resume()
    }
}

/// A closure kept in a `Mutex` must sit inside a struct: stored as the mutex's generic value
/// itself, every access converts it between abstraction levels and stores it back wrapped in
/// two more thunks, so each commit would make the next call deeper and slower without bound.
package struct CommitObserver: Sendable {
    package let observe: @Sendable (Duration) -> Void

    package init(observe: @escaping @Sendable (Duration) -> Void) { self.observe = observe }
}
