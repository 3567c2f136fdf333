import Foundation

/// Where the daemon reads the time and waits for it: leases, backoff, provider pauses,
/// retention and, next, send windows. One value passed in, so tests advance a clock
/// (`ManualClock`) instead of sleeping or running under libfaketime.
///
/// PostgreSQL's leases and due times stay on the database's clock, the one every daemon of a
/// group shares; this clock is what one process reads.
public protocol DaemonClock: Sendable {
    /// The wall clock, UNIX seconds: times that are stored, compared with other processes' or shown.
    var now: Double { get }
    /// Time since an origin of this clock's, never going back (a wall clock may): what waits and pauses are measured in.
    var elapsed: Duration { get }
    /// Returns once `duration` passed on this clock; throws `CancellationError` when the task is cancelled.
    func sleep(for duration: Duration) async throws
}

/// The machine's clocks: `Date` for the wall, the continuous clock for waits.
public struct SystemClock: DaemonClock {
    private static let origin = ContinuousClock.now

    public init() {}

    public var now: Double { Date().timeIntervalSince1970 }
    public var elapsed: Duration { ContinuousClock.now - Self.origin }

    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}

extension DaemonClock where Self == SystemClock {
    public static var system: SystemClock { SystemClock() }
}
