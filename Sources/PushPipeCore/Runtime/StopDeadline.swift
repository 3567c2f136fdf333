import Synchronization

/// The deadline that the writes of a stopping pipeline share: set by the first one cancelled.
final class StopDeadline: Sendable {
    private let deadline = Mutex<ContinuousClock.Instant?>(nil)

    func after(_ grace: Duration) -> ContinuousClock.Instant {
        deadline.withLock { deadline in
            if let deadline { return deadline }
            let due = ContinuousClock.now + grace
            deadline = due
            return due
        }
    }
}
