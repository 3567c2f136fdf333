import NIOPosix
import ServiceLifecycle
import Testing

@testable import PushPipeCore
@testable import PushPipeHTTP

/// Notes whether it, and a child task it starts (as a server starts one per connection), run
/// on one of NIO's event loops.
private struct WhereService: Service {
    let seen: AsyncStream<[Bool]>.Continuation

    func run() async throws {
        let itself = MultiThreadedEventLoopGroup.currentEventLoop != nil
        let child = await withTaskGroup(of: Bool.self) { group in
            group.addTask { MultiThreadedEventLoopGroup.currentEventLoop != nil }
            return await group.next() ?? false
        }
        seen.yield([itself, child])
    }
}

@Suite struct ExecutorPreferringServiceTests {
    /// The HTTP servers run their handlers on the loops that read the requests: otherwise each
    /// request would wake a thread of Swift's pool, and back, a context switch each way.
    @Test func aServiceAndTheTasksItStartsRunOnTheEventLoops() async throws {
        let (seen, continuation) = AsyncStream<[Bool]>.makeStream()
        try await ExecutorPreferringService(inner: WhereService(seen: continuation), executor: EventLoopGroupTaskExecutor.singleton).run()
        try await WhereService(seen: continuation).run()
        continuation.finish()
        var results: [[Bool]] = []
        for await result in seen { results.append(result) }
        #expect(results == [[true, true], [false, false]])
    }
}
