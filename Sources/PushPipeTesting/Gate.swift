import Synchronization

/// Tasks wait at the gate until the test opens it; then they are all ready to run at once, so
/// a race between them (a cache checked by all before any fills it) happens every time.
public final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

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

    /// Waiters so far.
    public var waiting: Int { state.withLock { $0.waiting.count } }

    public func open() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
