import Foundation

/// A filter's "not now": the event waits in the store (a work item, so a kill, a restart or a
/// reload keeps it) until `until`, then goes through the pipeline again from its first filter,
/// so settings and dedupe are read as they are when it is sent. Timing rules (a send at a
/// time, quiet hours) are filters that answer this; the runtime knows only the wait.
public struct EventHold: Sendable, Equatable {
    /// What the event's status says while it waits.
    public enum Kind: String, Sendable, CaseIterable {
        /// Sent at an instant its timing gives (an `at`, a delay, a local time).
        case scheduled
        /// Outside a send window: it waits for the next opening.
        case deferred
        /// In a digest: it waits for the digest to close (and carries it, if it opened it).
        case batched
    }

    public var kind: Kind
    public var until: Date
    /// For people: why then (the rule, the zone, the window).
    public var reason: String
    /// A short fixed label for metrics (`send_at`, `quiet_hours`).
    public var code: String
    /// A key its caller names the send by: a later event of the same caller with the same key
    /// replaces it while it waits, and a cancel route withdraws it.
    public var replaceKey: String?
    /// Who holds it, as the filter knows itself whatever its place in the file (its type, and
    /// its name when it has one): a reload that reorders filters does not make another filter
    /// take this wait for its own.
    public var holder: String

    public init(_ kind: Kind, until: Date, reason: String, code: String, holder: String, replaceKey: String? = nil) {
        self.kind = kind
        self.until = until
        self.reason = reason
        self.code = code
        self.holder = holder
        self.replaceKey = replaceKey
    }
}

/// A hold an event went through: who held it (`EventHold.holder`) and until when. A filter
/// that finds its own hold on an event that comes back knows its wait is over (a scheduled
/// send is not "late" for having waited).
public struct PassedHold: Sendable, Equatable {
    /// The holder (`EventHold.holder`).
    public var stage: String
    public var until: Double

    public init(stage: String, until: Double) {
        self.stage = stage
        self.until = until
    }
}

extension Event {
    /// The last hold `holder` put this event under, if it came back from one.
    public func hold(by holder: String) -> PassedHold? {
        holds.last { $0.stage == holder }
    }
}
