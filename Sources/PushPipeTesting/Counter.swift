import Synchronization

/// A counter shared between concurrent test tasks.
public final class Counter: Sendable {
    private let value = Mutex(0)
    public init() {}

    /// Adds one and returns the new value.
    @discardableResult
    public func increment() -> Int {
        value.withLock {
            $0 += 1
            return $0
        }
    }
    public var current: Int { value.withLock { $0 } }
}
