import Synchronization

/// Many small writes, few transactions: callers queue a write and wait for it; whoever finds
/// no commit running becomes the leader and commits everything queued in one transaction,
/// then keeps going while more arrived. Each caller returns only once its write committed,
/// so durability is the same as one transaction per write, at a fraction of the cost.
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

    /// Commits batches until none is left; throws if the batch holding the leader's own write failed.
    private func lead() async throws {
        var ownFailure: (any Error)?
        while true {
            if state.withLock({ $0.underLoad }) { try? await Task.sleep(for: Self.gatheringWindow) }
            let batch = state.withLock { state -> [Entry] in
                defer { state.pending.removeAll(keepingCapacity: true) }
                if state.pending.isEmpty {
                    state.committing = false
                    state.underLoad = false
                } else {
                    state.underLoad = state.pending.count > 1
                }
                return state.pending
            }
            guard !batch.isEmpty else { break }
            do {
                try await commit(batch.map(\.write))
                for entry in batch where !entry.isLeader { entry.continuation.resume(returning: false) }
            } catch {
                if batch.contains(where: \.isLeader) { ownFailure = error }
                for entry in batch where !entry.isLeader { entry.continuation.resume(throwing: error) }
            }
        }
        if let ownFailure { throw ownFailure }
    }
}
