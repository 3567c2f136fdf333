import Synchronization

/// Tasks wait at the gate until the test opens it; then they are all ready to run at once, so
/// a race between them (a cache checked by all before any fills it) happens every time. An
/// event loop's handler, which cannot wait, leaves an action to run when it opens.
public final class Gate: Sendable {
    private struct State {
        var open = false
        var waiting: [CheckedContinuation<Void, Never>] = []
        var actions: [@Sendable () -> Void] = []
    }

    private let state = Mutex(State())

    public init() {}

    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = state.withLock { state -> Bool in
                if !state.open { state.waiting.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    /// Runs `action` when the gate opens (at once if it is open).
    public func whenOpen(_ action: @escaping @Sendable () -> Void) {
        let open = state.withLock { state -> Bool in
            if !state.open { state.actions.append(action) }
            return state.open
        }
        if open { action() }
    }

    /// Waiters so far.
    public var waiting: Int { state.withLock { $0.waiting.count } }

    public func open() {
        let (waiting, actions) = state.withLock { state in
            state.open = true
            defer {
                state.waiting.removeAll()
                state.actions.removeAll()
            }
            return (state.waiting, state.actions)
        }
        for continuation in waiting { continuation.resume() }
        for action in actions { action() }
    }
}
