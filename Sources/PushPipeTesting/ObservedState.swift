import Foundation
import Synchronization

/// State shared between a stand-in (or a child process reader) and a test, which waits for
/// a condition on it instead of sleeping: every change wakes the waiters, and a version
/// number makes sure no change is missed between looking and waiting.
public final class ObservedState<Value: Sendable>: Sendable {
    struct Storage {
        var value: Value
        var version = 0
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
    }

    private let storage: Mutex<Storage>

    public init(_ value: Value) {
        storage = Mutex(Storage(value: value))
    }

    public var value: Value { storage.withLock { $0.value } }

    @discardableResult
    public func update<T>(_ change: (inout Value) -> T) -> T {
        let (result, waiters) = storage.withLock { storage in
            let result = change(&storage.value)
            storage.version += 1
            defer { storage.waiters.removeAll() }
            return (result, Array(storage.waiters.values))
        }
        for waiter in waiters { waiter.resume() }
        return result
    }

    /// Returns the first non-nil result of `check`, or throws `failure(value)` at the deadline,
    /// or `CancellationError` once the waiting task is cancelled.
    public func wait<T>(timeout: Double, _ check: (Value) throws -> T?, failure: (Value) -> any Error) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while true {
            let (value, version) = storage.withLock { ($0.value, $0.version) }
            if let result = try check(value) { return result }
            try Task.checkCancellation()
            if ContinuousClock.now >= deadline { throw failure(value) }
            await nextChange(after: version, deadline: deadline)
        }
    }

    private func nextChange(after version: Int, deadline: ContinuousClock.Instant) async {
        let id = UUID()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await Task.sleep(until: deadline)
                self.storage.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
            }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = storage.withLock { storage -> Bool in
                    // Past the deadline or cancelled, the timer may have ended already: a
                    // waiter stored now would wait for a change that may never come.
                    guard storage.version == version, !Task.isCancelled, ContinuousClock.now < deadline else { return false }
                    storage.waiters[id] = continuation
                    return true
                }
                if !waiting { continuation.resume() }
            }
            group.cancelAll()
        }
    }
}

public struct WaitTimedOut: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
