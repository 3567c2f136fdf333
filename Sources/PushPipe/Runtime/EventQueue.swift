import DequeModule
import Synchronization

/// Hands events from sources to workers without a buffer: `send` returns once a worker took
/// the element, so a source feels backpressure as soon as every worker is busy.
///
/// It replaced `AsyncChannel`, whose general state machine (cancellation of both sides,
/// ordered sets of suspended tasks) cost about 5% of the APNs path. This one relies on what the
/// runner guarantees: nothing is sent after `finish`, and workers are not cancelled while
/// waiting (they end by `finish` returning `nil`).
final class EventQueue<Element: Sendable>: Sendable {
    private struct State {
        var idleWorkers: Deque<CheckedContinuation<Element?, Never>> = []
        var waitingSends: Deque<(element: Element, continuation: CheckedContinuation<Void, Never>)> = []
        var finished = false
    }

    private let state = Mutex(State())

    private enum Admission { case worker(CheckedContinuation<Element?, Never>), wait, refused }
    private enum Take { case send(Element, CheckedContinuation<Void, Never>), finished, wait }

    /// Waits until a worker takes `element`; `false` (and nobody took it) after `finish`.
    func send(_ element: Element) async -> Bool {
        let admission = state.withLock { state -> Admission in
            if state.finished { return .refused }
            if let worker = state.idleWorkers.popFirst() { return .worker(worker) }
            return .wait
        }
        switch admission {
        case .refused: return false
        case .worker(let worker):
            worker.resume(returning: element)
            return true
        case .wait:
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let worker = state.withLock { state -> CheckedContinuation<Element?, Never>? in
                    if let worker = state.idleWorkers.popFirst() { return worker }
                    state.waitingSends.append((element, continuation))
                    return nil
                }
                if let worker {
                    worker.resume(returning: element)
                    continuation.resume()
                }
            }
            return true // a waiting send is always taken: nothing finishes the queue while one waits
        }
    }

    /// The next element, or `nil` once finished and nothing is left.
    func next() async -> Element? {
        let take = state.withLock { state -> Take in
            if let send = state.waitingSends.popFirst() { return .send(send.element, send.continuation) }
            return state.finished ? .finished : .wait
        }
        switch take {
        case .send(let element, let sender):
            sender.resume()
            return element
        case .finished:
            return nil
        case .wait:
            return await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
                let ready = state.withLock { state -> (Element, CheckedContinuation<Void, Never>)?? in
                    if let send = state.waitingSends.popFirst() { return (send.element, send.continuation) }
                    if state.finished { return .some(nil) }
                    state.idleWorkers.append(continuation)
                    return nil
                }
                switch ready {
                case .some(.some(let (element, sender))):
                    sender.resume()
                    continuation.resume(returning: element)
                case .some(.none):
                    continuation.resume(returning: nil)
                case .none:
                    break
                }
            }
        }
    }

    /// Senders waiting for a worker (tests watch it to know a sender is suspended).
    var waitingSendCount: Int { state.withLock { $0.waitingSends.count } }

    /// Idle workers get `nil`; elements still waiting are taken first.
    func finish() {
        let idle = state.withLock { state -> Deque<CheckedContinuation<Element?, Never>> in
            state.finished = true
            defer { state.idleWorkers.removeAll() }
            return state.idleWorkers
        }
        for worker in idle { worker.resume(returning: nil) }
    }
}
