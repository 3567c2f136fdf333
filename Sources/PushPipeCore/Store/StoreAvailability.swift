import Logging
import Synchronization

/// Whether a shared store answers, as its last operations found out.
///
/// While it does not, every operation but one fails at once with `StoreUnavailableError`:
/// the one let through (the probe) learns when it is back. New accepts so get a 503 at once
/// instead of piling up behind a pool that waits to reconnect, and the writes that must not
/// be lost (outcomes, lease renewals) retry at their own pace. Each change of state is logged
/// once, not once per failed operation.
public final class StoreAvailability: Sendable {
    private struct State {
        var failingSince: ContinuousClock.Instant?
        /// When the probe in progress was let through.
        var probing: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let logger: Logger
    private let name: String
    /// A probe still out after this long is given up on, and the next operation probes: one
    /// that never came back (a connection that hung) must not keep the store "away" for good.
    private let probeLimit: Duration

    public init(name: String, logger: Logger, probeLimit: Duration = .seconds(60)) {
        self.name = name
        self.logger = logger
        self.probeLimit = probeLimit
    }

    var isFailing: Bool { state.withLock { $0.failingSince != nil } }

    /// How long the store has been failing (nil while it answers).
    public var failingFor: Duration? { state.withLock { $0.failingSince.map { .now - $0 } } }

    /// Lets an operation run; returns whether it is the probe (the one let through while the
    /// store fails), which must be ended by `answered`, `failed` or `abandoned`.
    public func admit() throws -> Bool {
        try state.withLock { state in
            guard let since = state.failingSince else { return false }
            if let probing = state.probing, .now - probing < probeLimit { throw StoreUnavailableError(store: name, failingFor: .now - since) }
            state.probing = .now
            return true
        }
    }

    /// The operation was cancelled before it learnt anything: the next one probes.
    public func abandoned(probe: Bool) {
        if probe { state.withLock { $0.probing = nil } }
    }

    /// The store answered (a result, or an error of its own such as a constraint): it is up.
    /// Only the probe says so: any other operation was let through before the store failed,
    /// and a statement that was already running when connections were cut may still finish.
    public func answered(probe: Bool) {
        let outage = state.withLock { state -> Duration? in
            guard probe else { return nil }
            state.probing = nil
            defer { state.failingSince = nil }
            return state.failingSince.map { .now - $0 }
        }
        if let outage { logger.notice("store: \(name) answers again, after \(outage.roundedSeconds) s without it") }
    }

    /// The store could not be reached or did not answer in time.
    public func failed(_ error: any Error, probe: Bool) {
        let isNew = state.withLock { state in
            if probe { state.probing = nil }
            guard state.failingSince == nil else { return false }
            state.failingSince = .now
            return true
        }
        if isNew {
            logger.error("store: \(name) does not answer (\(error)); writes wait and new events get 503 until it does (logged again then)")
        }
    }
}

extension StoreAvailability {
    /// Whether `error` says the store could not be reached or did not answer in time (which the
    /// store logs itself, once per outage), rather than an answer it gave.
    public static func meansAway(_ error: any Error) -> Bool {
        error is StoreUnavailableError || error is StoreTimeoutError
    }
}

/// The store is known not to answer: the operation was not tried. The HTTP host answers 503.
public struct StoreUnavailableError: Error, CustomStringConvertible {
    public var store: String
    public var failingFor: Duration
    /// What the operation that found it out met (nil when it was not tried).
    public var cause: String?

    public init(store: String, failingFor: Duration, cause: String? = nil) {
        self.store = store
        self.failingFor = failingFor
        self.cause = cause
    }

    public var description: String {
        cause.map { "the store (\(store)) cannot be reached: \($0)" }
            ?? "the store (\(store)) does not answer, for \(failingFor.roundedSeconds) s now"
    }
}

/// The store did not give a connection, or an answer, in time.
public struct StoreTimeoutError: Error, CustomStringConvertible {
    public var store: String
    public var waited: Duration
    public var what: String

    public init(store: String, waited: Duration, what: String) {
        self.store = store
        self.waited = waited
        self.what = what
    }

    public var description: String { "the store (\(store)) gave no \(what) within \(waited.roundedSeconds) s" }
}

extension Duration {
    package var roundedSeconds: Int64 { components.seconds + (components.attoseconds >= 500_000_000_000_000_000 ? 1 : 0) }
}
