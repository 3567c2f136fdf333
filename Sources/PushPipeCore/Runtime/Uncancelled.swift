/// Runs `body` in a task of its own, out of the caller's cancellation, and waits for it.
///
/// For store writes that must happen even when their caller was cancelled (a pipeline stopping
/// at its drain timeout): a release, a lease let go of, a commit carrying other callers' writes.
/// The pool refuses a connection to a cancelled task.
public func uncancelled<Result: Sendable>(_ body: @escaping @Sendable () async throws -> Result) async throws -> Result {
    try await Task { try await body() }.value
}
