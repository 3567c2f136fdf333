import PushPipeCore
import PushPipePostgres
import PushPipeSQLite
import Synchronization

/// Counts completed events; `wait` returns once all of them completed.
final class OutcomeCounter: Sendable {
    private let state = Mutex<(delivered: Int, failed: Int, waiter: (count: Int, continuation: CheckedContinuation<Void, Never>)?)>((0, 0, nil))

    func add(_ report: EventReport) {
        let resume = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if report.status == .delivered { state.delivered += 1 } else { state.failed += 1 }
            guard let waiter = state.waiter, state.delivered + state.failed >= waiter.count else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        resume?.resume()
    }

    func wait(for count: Int) async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.delivered + state.failed >= count { return true }
                state.waiter = (count, continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    var totals: (delivered: Int, failed: Int) { state.withLock { ($0.delivered, $0.failed) } }
}
