import PushPipeTesting
import Synchronization
import Testing

@testable import PushPipeCore

/// A failed batch is committed again write by write, so one write the store refuses does not
/// fail every write of its group commit and have the runtime retry them all for ever.
@Suite struct GroupCommitIsolationTests {
    struct Refused: Error {}

    /// Holds the first commit (of write 0) open until `release`, queues `writes` behind it as
    /// one batch, lets it go, and returns what each write's caller got.
    static func batch(_ writes: [Int], committing commit: @escaping @Sendable ([Int]) async throws -> Void) async -> [Int: (any Error)?] {
        let release = Gate()
        let group = GroupCommit<Int> { batch in
            if batch == [0] { await release.wait() }
            try await commit(batch)
        }
        let first = Task { try await group.submit(0) }
        await group.pendingWritesReach(0)
        let tasks = writes.map { write in (write, Task { try await group.submit(write) }) }
        await group.pendingWritesReach(writes.count)
        release.open()
        _ = try? await first.value
        var results: [Int: (any Error)?] = [:]
        for (write, task) in tasks {
            do {
                try await task.value
                results[write] = .some(nil)
            } catch {
                results[write] = error
            }
        }
        return results
    }

    @Test func aRefusedWriteFailsAloneAndTheRestOfItsBatchCommits() async throws {
        let committed = Mutex<[Int]>([])
        let results = await Self.batch([1, -1, 2, 3]) { writes in
            if writes.contains(-1) { throw Refused() }
            committed.withLock { $0 += writes }
        }
        #expect(results[-1].flatMap { $0 } is Refused)
        for write in [1, 2, 3] { #expect(results[write].flatMap { $0 } == nil, "write \(write): \(String(describing: results[write]))") }
        #expect(committed.withLock { $0.sorted() } == [0, 1, 2, 3])
    }

    /// While the store is away every write would wait out the outage again: the batch fails as one.
    @Test func aBatchFailedByAnOutageIsNotCommittedAgainWriteByWrite() async throws {
        let commits = Counter()
        let results = await Self.batch([1, 2, 3]) { writes in
            _ = commits.increment()
            if writes != [0] { throw StoreUnavailableError(store: "test", failingFor: .zero) }
        }
        for write in [1, 2, 3] { #expect(results[write].flatMap { $0 } is StoreUnavailableError) }
        #expect(commits.current == 2, "the held commit and the batch's, none per write")
    }
}
