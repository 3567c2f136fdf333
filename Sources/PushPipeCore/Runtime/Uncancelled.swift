import Synchronization

/// Runs `body` in a task of its own, out of the caller's cancellation, and waits for it.
///
/// For store writes that must happen even when their caller was cancelled (a pipeline stopping
/// at its drain timeout): a release, a lease let go of, a commit carrying other callers' writes.
/// The pool refuses a connection to a cancelled task.
public func uncancelled<Result: Sendable>(_ body: @escaping @Sendable () async throws -> Result) async throws -> Result {
    try await Task { try await body() }.value
}

/// Runs `body` out of the caller's cancellation until a deadline asked for when the caller is
/// cancelled, then cancels it: for a write that retries while the store is away, worth
/// finishing after a stop (what it records went out already) but not worth holding the stop
/// for ever. The writes of one stop share one deadline (`StopDeadline`), so a stop lasts one
/// grace, not one per write.
public func uncancelled<Result: Sendable>(
    until deadline: @escaping @Sendable () -> ContinuousClock.Instant,
    _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    let task = Task { try await body() }
    let timer = Mutex<Task<Void, Never>?>(nil)
    defer { timer.withLock { $0?.cancel() } }
    return try await withTaskCancellationHandler {
        try await task.value
    } onCancel: {
        let due = deadline()
        timer.withLock { timer in
            timer = Task {
                guard (try? await Task.sleep(until: due, clock: .continuous)) != nil else { return }
                task.cancel()
            }
        }
    }
}
