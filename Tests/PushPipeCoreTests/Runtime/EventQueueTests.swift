import NIOPosix
import Testing

@testable import PushPipeCore

@Suite struct EventQueueTests {
    /// Suspends until `queue` has `count` suspended senders (no sleeping: the senders run as soon as they can).
    func waitForSuspendedSenders(_ queue: EventQueue<Int>, _ count: Int) async {
        while queue.waitingSendCount < count { await Task.yield() }
    }

    @Test func sendersWaitForRoomAndAreServedInOrder() async {
        let queue = EventQueue<Int>(capacity: 1)
        #expect(await queue.send(1))
        await withTaskGroup(of: Void.self) { group in
            group.addTask { #expect(await queue.send(2)) }
            await waitForSuspendedSenders(queue, 1)
            group.addTask { #expect(await queue.send(3)) }
            await waitForSuspendedSenders(queue, 2)
            #expect(await queue.next(upTo: 10) == [1])
            // Taken is not done: the event still counts against the capacity.
            #expect(queue.waitingSendCount == 2)
            queue.done(1)
            #expect(await queue.next(upTo: 10) == [2])
            queue.done(1)
            #expect(await queue.next(upTo: 10) == [3])
            queue.done(1)
            await group.waitForAll()
        }
        #expect(queue.waitingSendCount == 0)
    }

    @Test func aWorkerTakesWhatIsBufferedUpToItsLimit() async {
        let queue = EventQueue<Int>(capacity: 10)
        for element in 1...5 { #expect(await queue.send(element)) }
        #expect(await queue.next(upTo: 3) == [1, 2, 3])
        #expect(await queue.next(upTo: 3) == [4, 5])
    }

    @Test func capacityCountsTakenEventsUntilDone() async {
        let queue = EventQueue<Int>(capacity: 2)
        #expect(await queue.send(1))
        #expect(await queue.send(2))
        #expect(await queue.next(upTo: 5) == [1, 2])
        await withTaskGroup(of: Void.self) { group in
            group.addTask { #expect(await queue.send(3)) }
            await waitForSuspendedSenders(queue, 1)
            queue.done(1)
            await group.waitForAll()
        }
        #expect(await queue.next(upTo: 5) == [3])
    }

    @Test func anIdleWorkerTakesTheNextSendDirectly() async {
        let queue = EventQueue<Int>(capacity: 4)
        await withTaskGroup(of: [Int].self) { group in
            group.addTask { await queue.next(upTo: 4) }
            // Sent before or after the worker parks: either way it gets exactly this one.
            #expect(await queue.send(7))
            #expect(await group.next() == [7])
        }
    }

    @Test func finishEndsIdleWorkersAndRefusesLaterSends() async {
        let queue = EventQueue<Int>(capacity: 4)
        await withTaskGroup(of: [Int].self) { group in
            group.addTask { await queue.next() }
            group.addTask { await queue.next() }
            #expect(await queue.send(7))
            queue.finish()
            let results = await group.reduce(into: [[Int]]()) { $0.append($1) }
            #expect(results.count == 2)
            #expect(results.flatMap { $0 } == [7])
        }
        #expect(await queue.send(8) == false)
        #expect(await queue.next() == [])
    }

    /// A stopping pipeline does not wait for room to come for its sources' next events.
    @Test func finishRefusesTheSendsWaitingForRoom() async {
        let queue = EventQueue<Int>(capacity: 1)
        #expect(await queue.send(1))
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await queue.send(2) }
            await waitForSuspendedSenders(queue, 1)
            queue.finish()
            #expect(await group.next() == false, "refused")
        }
        #expect(await queue.next(upTo: 5) == [1], "what the queue held is still taken")
        #expect(await queue.next(upTo: 5) == [])
    }

    /// A woken worker takes what was buffered by the time it runs, not only the send that woke
    /// it (handed that one, it made a batch of one). On one thread, so the worker can only run
    /// once the sender waits: it then finds all three.
    @Test func aWokenWorkerTakesEverythingBufferedByTheTimeItRuns() async throws {
        let loop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let taken = await withTaskExecutorPreference(EventLoopGroupTaskExecutor(loop)) {
            let queue = EventQueue<Int>(capacity: 8)
            return await withTaskGroup(of: [Int].self) { group in
                group.addTask { await queue.next(upTo: 8) }
                while queue.idleWorkerCount == 0 { await Task.yield() }
                for element in 1...3 { _ = await queue.send(element) }
                return await group.next() ?? []
            }
        }
        try await loop.shutdownGracefully()
        #expect(taken == [1, 2, 3])
    }
}
