/// The one way a test waits for a daemon, a store or a stand-in to get somewhere it cannot
/// announce: it names what it waits for (a record's state, a row gone, a metric's count), and
/// that is looked at again until it holds, first every 10 ms and then at most every 200 ms.
/// A log line is no such thing: its wording changes, and a test that waits for it tests the
/// wording (a line is waited for only where it is what is tested: a diagnostic, a tap's record).
public func eventually(_ what: String, timeout: Duration = .seconds(30), _ holds: () async throws -> Bool) async throws {
    _ = try await eventually(what, timeout: timeout) { try await holds() ? true : nil }
}

/// Waits until `value` gives one, and returns it (the record, once it is written).
public func eventually<Value>(_ what: String, timeout: Duration = .seconds(30), _ value: () async throws -> Value?) async throws -> Value {
    let deadline = ContinuousClock.now + timeout
    var pause = Duration.milliseconds(10)
    var lastError: (any Error)?
    while true {
        do {
            if let found = try await value() { return found }
            lastError = nil
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            // Not there yet (a file not created, a route not served): looked at again.
            lastError = error
        }
        guard ContinuousClock.now < deadline else { throw EventuallyTimeout(what: what, timeout: timeout, lastError: lastError) }
        try await Task.sleep(for: pause)
        pause = min(pause * 2, .milliseconds(200))
    }
}

/// What a test waited for did not happen in time.
public struct EventuallyTimeout: Error, CustomStringConvertible {
    public var what: String
    public var timeout: Duration
    public var lastError: (any Error)?

    public var description: String {
        "waited \(timeout) for \(what)" + (lastError.map { "; the last look failed: \($0)" } ?? "")
    }
}
