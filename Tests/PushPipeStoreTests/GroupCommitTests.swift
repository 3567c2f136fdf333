import Foundation
import PushPipeTesting
import Synchronization
import Testing

@testable import PushPipeCore

@Suite struct GroupCommitTests {
    struct Broken: Error {}

    /// Each caller waits for at most the batch in progress and its own: a leader committing
    /// batches until none is pending would, under sustained load, keep one caller (an HTTP
    /// request waiting for its 202) waiting for other callers' writes.
    @Test func eachCallerWaitsForAtMostTwoCommitsUnderSustainedLoad() async throws {
        // Each commit notes its number beside the writes it holds, so a caller's wait is
        // counted from what happened, not from when its task got to run again: the commits
        // that ended before its write was queued do not count; the one holding it does.
        let started = Counter()
        let ended = Counter()
        let commitOf = CommitNumbers()
        let group = GroupCommit<Int> { writes in
            let number = started.increment()
            commitOf.note(writes, number)
            try await Task.sleep(for: .milliseconds(1))
            ended.increment()
        }
        let writers = 16
        let writesEach = 40
        let (waited, mostEndedUntilReturn) = await withTaskGroup(of: ([Int], Int).self, returning: ([Int], Int).self) { tasks in
            for writer in 0..<writers {
                tasks.addTask {
                    var waited: [Int] = []
                    var mostEnded = 0
                    for write in 0..<writesEach {
                        let id = writer * writesEach + write
                        let endedBefore = ended.current
                        try? await group.submit(id)
                        let endedAfter = ended.current
                        waited.append((commitOf.number(of: id) ?? .max) - endedBefore)
                        mostEnded = max(mostEnded, endedAfter - endedBefore)
                    }
                    return (waited, mostEnded)
                }
            }
            var all: [Int] = []
            var most = 0
            for await (waited, mostEnded) in tasks {
                all += waited
                most = max(most, mostEnded)
            }
            return (all, most)
        }
        // The commit running when the write arrived, and the one holding it. The count starts
        // when the caller read it, a moment before its write is queued: on a loaded machine the
        // caller's thread may be descheduled in that moment while commits go on, so a few writes
        // may count one or two commits more. A write left behind by the commits (a batch that
        // takes only some of what is pending) waits for many, and for many writes.
        let late = waited.filter { $0 > 2 }
        #expect(late.count <= waited.count / 50, "\(late.count) of \(waited.count) writes waited for more than 2 commits: \(late)")
        #expect(waited.max() ?? 0 <= 6, "a caller's write waited for \(waited.max() ?? 0) commits")
        // And the caller returns then, not after committing the writes of others: the count
        // read after its return may include a commit or two that ended while its task waited
        // to run again on a loaded machine, far fewer than a leader draining every batch.
        #expect(mostEndedUntilReturn <= 8, "a caller returned after \(mostEndedUntilReturn) commits")
        #expect(started.current < writers * writesEach, "writes still share transactions")
    }

    /// Under load the leader commits once the writes it expects are in, instead of waiting out
    /// the whole gathering window before each commit, which would bound ingestion by the window
    /// with the CPU idle. With a window of a minute, closed-loop writers must still get through
    /// 60 commits at once: a leader that waits out the window would need a minute for each.
    @Test func theLeaderCommitsOnceTheWritesItExpectsAreIn() async throws {
        let commits = AsyncStream<Void>.makeStream()
        // Each commit takes a millisecond, as a transaction does, so writes queue behind it.
        let group = GroupCommit<Int>(gatheringWindow: .seconds(60)) { _ in
            try await Task.sleep(for: .milliseconds(1))
            commits.continuation.yield()
        }
        let writers = 8
        let made = await withTaskGroup(of: Int?.self) { tasks -> Int in
            for writer in 0..<writers {
                tasks.addTask {
                    var write = writer
                    // Cancelled at the end: a gathering leader stops waiting and commits.
                    while !Task.isCancelled {
                        try? await group.submit(write)
                        write += writers
                    }
                    return nil
                }
            }
            // A bound, not a synchronisation: a leader that waits out the window would still be
            // in its first one (60 s). Generous, for a loaded 2-core machine running every suite at once.
            tasks.addTask {
                try? await Task.sleep(for: .seconds(50))
                return nil
            }
            tasks.addTask {
                var made = 0
                for await _ in commits.stream {
                    made += 1
                    if made == 60 { break }
                }
                return made
            }
            // The first to finish: the count of 60, or the bound (nil).
            let made = await tasks.next().flatMap { $0 } ?? 0
            tasks.cancelAll()
            return made
        }
        #expect(made == 60, "\(made) commits before the bound; each waited out the window")
    }

    /// A closure stored as a `Mutex`'s value itself is re-wrapped in two reabstraction thunks
    /// at each access, so the call would go one level deeper per commit, costing ever more CPU
    /// and a stack that grows until it overflows. The depth of the stack inside the observer
    /// must not change with the number of commits.
    @Test func theCommitObserverDoesNotGetDeeperWithEachCommit() async throws {
        let group = GroupCommit<Int> { _ in }
        let depths = Mutex<[Int]>([])
        group.observer.withLock { $0 = CommitObserver { _ in depths.withLock { $0.append(Thread.callStackReturnAddresses.count) } } }
        for write in 0..<500 { try await group.submit(write) }
        let recorded = depths.withLock { $0 }
        #expect(recorded.count == 500)
        #expect(recorded.last == recorded.first, "stack depth \(recorded.first ?? 0) at the first commit, \(recorded.last ?? 0) at the 500th")
    }

    @Test func aFailedBatchFailsItsCallersAndTheNextBatchGoesOn() async throws {
        let calls = Counter()
        let group = GroupCommit<Int> { _ in
            if calls.increment() == 1 { throw Broken() }
        }
        await #expect(throws: Broken.self) { try await group.submit(1) }
        try await group.submit(2)
    }
}

/// Which commit held each write.
final class CommitNumbers: Sendable {
    private let numbers = Mutex<[Int: Int]>([:])
    func note(_ writes: [Int], _ number: Int) { numbers.withLock { for write in writes { $0[write] = number } } }
    func number(of write: Int) -> Int? { numbers.withLock { $0[write] } }
}
