@testable import PushPipe
import Testing

@Suite struct EventQueueTests {
    /// Suspends until `queue` has `count` suspended senders (no sleeping: the senders run as soon as they can).
    func waitForSuspendedSenders(_ queue: EventQueue<Int>, _ count: Int) async {
        while queue.waitingSendCount < count { await Task.yield() }
    }

    @Test func sendersWaitForAWorkerAndAreServedInOrder() async {
        let queue = EventQueue<Int>()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { #expect(await queue.send(1)) }
            await waitForSuspendedSenders(queue, 1)
            group.addTask { #expect(await queue.send(2)) }
            await waitForSuspendedSenders(queue, 2)
            #expect(await queue.next() == 1)
            #expect(await queue.next() == 2)
            await group.waitForAll()
        }
        #expect(queue.waitingSendCount == 0)
    }

    @Test func anIdleWorkerTakesTheNextSendDirectly() async {
        let queue = EventQueue<Int>()
        await withTaskGroup(of: Int?.self) { group in
            group.addTask { await queue.next() }
            #expect(await queue.send(7))
            #expect(await group.next() == 7)
        }
    }

    @Test func finishEndsIdleWorkersAndRefusesLaterSends() async {
        let queue = EventQueue<Int>()
        await withTaskGroup(of: Int?.self) { group in
            group.addTask { await queue.next() }
            group.addTask { await queue.next() }
            #expect(await queue.send(7))
            queue.finish()
            let results = await group.reduce(into: [Int?]()) { $0.append($1) }
            #expect(results.count == 2)
            #expect(results.compactMap { $0 } == [7])
        }
        #expect(await queue.send(8) == false)
        #expect(await queue.next() == nil)
    }
}
