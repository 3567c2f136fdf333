import Foundation
@testable import PushPipe
import Synchronization
import PushPipeTesting
import Testing

@Suite struct GroupCommitTests {
    struct Broken: Error {}

    /// Issue 12: the leader committed batches until none was pending, so under sustained load
    /// one caller (an HTTP request waiting for its 202) waited seconds for other callers'
    /// writes. Each caller now waits for at most the batch in progress and its own.
    @Test func eachCallerWaitsForAtMostTwoCommitsUnderSustainedLoad() async throws {
        // Counted when a commit ends: a caller waits through the commits that end meanwhile.
        // (Counted at the start, the next leader's commit could begin between a caller's
        // resumption and its reading of the count, and be counted against it.)
        let commits = Counter()
        let group = GroupCommit<Int> { _ in
            try await Task.sleep(for: .milliseconds(1))
            commits.increment()
        }
        let writers = 16
        let writesEach = 40
        let mostCommitsWaited = await withTaskGroup(of: Int.self, returning: Int.self) { tasks in
            for writer in 0..<writers {
                tasks.addTask {
                    var most = 0
                    for write in 0..<writesEach {
                        let before = commits.current
                        try? await group.submit(writer * writesEach + write)
                        most = max(most, commits.current - before)
                    }
                    return most
                }
            }
            var most = 0
            for await value in tasks { most = max(most, value) }
            return most
        }
        // The commit running when the write arrived, and the one holding it.
        #expect(mostCommitsWaited <= 2, "a caller waited through \(mostCommitsWaited) commits")
        #expect(commits.current < writers * writesEach, "writes still share transactions")
    }

    /// The commit observer was stored as a `Mutex`'s value itself; each access re-wrapped it
    /// in two reabstraction thunks, so the call went one level deeper per commit (after a
    /// minute of load, 11% of the CPU and a stack that grows until it overflows). The depth of
    /// the stack inside the observer must not change with the number of commits.
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
