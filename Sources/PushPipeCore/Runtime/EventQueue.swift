import DequeModule
import Synchronization

/// Hands events from sources to workers, at most `capacity` at a time between being sent and
/// being reported `done`: `send` returns once the event is held (buffered or taken), and
/// suspends while `capacity` are, so a slow transport slows the sources and memory stays
/// bounded. A worker takes every buffered event up to its limit at once: under load it
/// works on many events per wake-up, since a task switch per event would be a large share of
/// the APNs path.
///
/// Not `AsyncChannel`: its general state machine does more per event than this path needs.
/// This queue relies on what the runner guarantees: workers are not cancelled while waiting
/// (they end by `finish` returning nothing). `finish` refuses the sends waiting for room: a
/// stopping pipeline must not wait for its sources' next events to find room, since room
/// comes only as fast as a slow or failing transport frees it.
final class EventQueue<Element: Sendable>: Sendable {
    private struct State {
        var buffer: Deque<Element> = []
        /// Workers waiting for events; woken to look in the buffer, not handed an event: by the
        /// time a woken worker runs, the sources have often buffered more, and it takes them all
        /// (handed the one event that woke it, it would make a batch of one: a commit, a send and a
        /// task switch for a single notification, often under load).
        var idleWorkers: Deque<CheckedContinuation<Void, Never>> = []
        var waitingSends: Deque<(element: Element, continuation: CheckedContinuation<Bool, Never>)> = []
        /// Buffered, and taken but not yet `done`.
        var held = 0
        var finished = false

        /// Admits `element` if there is room and nobody waits before it; nil otherwise.
        mutating func admitIfRoom(_ element: Element, capacity: Int) -> Admission? {
            guard held < capacity, waitingSends.isEmpty else { return nil }
            return admit(element).map { .worker($0) } ?? .held
        }

        /// Buffers `element` now there is room; returns an idle worker to wake for it.
        mutating func admit(_ element: Element) -> CheckedContinuation<Void, Never>? {
            held += 1
            buffer.append(element)
            return idleWorkers.popFirst()
        }

        mutating func take(upTo limit: Int) -> [Element] {
            let taken = Array(buffer.prefix(limit))
            buffer.removeFirst(taken.count)
            return taken
        }
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    private enum Admission {
        case worker(CheckedContinuation<Void, Never>)
        case held, wait, refused
    }

    /// Returns once the queue holds `element`; `false` (and nobody holds it) after `finish`.
    func send(_ element: Element) async -> Bool {
        let capacity = self.capacity
        let admission = state.withLock { state -> Admission in
            if state.finished { return .refused }
            return state.admitIfRoom(element, capacity: capacity) ?? .wait
        }
        switch admission {
        case .refused: return false
        case .held: return true
        case .worker(let worker):
            worker.resume()
            return true
        case .wait:
            return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let admitted = state.withLock { state -> Admission in
                    if state.finished { return .refused }
                    if let admitted = state.admitIfRoom(element, capacity: capacity) { return admitted }
                    state.waitingSends.append((element, continuation))
                    return .wait
                }
                switch admitted {
                case .worker(let worker):
                    worker.resume()
                    continuation.resume(returning: true)
                case .held:
                    continuation.resume(returning: true)
                case .refused:
                    continuation.resume(returning: false)
                case .wait:
                    break
                }
            }
        }
    }

    /// Up to `limit` buffered elements, waiting for one if none is; empty once finished and
    /// nothing is left. The caller reports them `done` once processed.
    func next(upTo limit: Int = 1) async -> [Element] {
        let limit = max(1, limit)
        while true {
            let taken = state.withLock { state -> [Element]? in
                if !state.buffer.isEmpty { return state.take(upTo: limit) }
                return state.finished ? [] : nil
            }
            if let taken { return taken }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if !state.buffer.isEmpty || state.finished { return true }
                    state.idleWorkers.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
            // Woken: another worker may have taken the events first; then it waits again.
        }
    }

    /// Processed elements leave the queue's count, making room for waiting senders.
    func done(_ count: Int) {
        let capacity = self.capacity
        let (senders, workers) = state.withLock { state -> ([CheckedContinuation<Bool, Never>], [CheckedContinuation<Void, Never>]) in
            state.held -= count
            var senders: [CheckedContinuation<Bool, Never>] = []
            var workers: [CheckedContinuation<Void, Never>] = []
            while state.held < capacity, let send = state.waitingSends.popFirst() {
                senders.append(send.continuation)
                if let worker = state.admit(send.element) { workers.append(worker) }
            }
            return (senders, workers)
        }
        for worker in workers { worker.resume() }
        for sender in senders { sender.resume(returning: true) }
    }

    /// Events buffered for a worker, and events workers took and have not reported `done`
    /// (read at each scrape).
    var counts: (buffered: Int, taken: Int) {
        state.withLock { ($0.buffer.count, $0.held - $0.buffer.count) }
    }

    /// Senders waiting for room (tests watch it to know a sender is suspended).
    var waitingSendCount: Int { state.withLock { $0.waitingSends.count } }

    /// Workers waiting for events (tests watch it to know a worker is suspended).
    var idleWorkerCount: Int { state.withLock { $0.idleWorkers.count } }

    /// Idle workers get nothing, waiting and later sends are refused; buffered elements are
    /// still taken.
    func finish() {
        let (idle, refused) = state.withLock { state in
            state.finished = true
            defer {
                state.idleWorkers.removeAll()
                state.waitingSends.removeAll()
            }
            return (state.idleWorkers, state.waitingSends.map(\.continuation))
        }
        for worker in idle { worker.resume() }
        for sender in refused { sender.resume(returning: false) }
    }
}
