import Foundation

/// What became of one event, kept in the store: the answer to "what happened to the event I
/// posted?" on any daemon of a group (`GET <events route>/:id`, `pushpipe events show`), and,
/// for an event that failed for good, the dead letter to replay once its cause is fixed.
public struct EventRecord: Sendable, Equatable {
    public enum State: String, Sendable, CaseIterable {
        /// Stored and waiting for a worker (or for a replay).
        case accepted
        /// Its first attempts are made; retries are under way.
        case processing
        case delivered
        /// Some recipients got it; the tokens of the others are dead (nothing to retry).
        case partiallyDelivered = "partially_delivered"
        /// Nobody could get it and nothing is left to retry: every token was dead.
        case failed
        /// A filter stopped it (`stage`, `code`), or nobody was registered.
        case dropped
        /// It failed for good with something worth another try (attempts exhausted, a
        /// configuration, render or plugin error): kept with its input for a replay.
        case deadLetter = "dead_letter"
        /// Waiting in the store for its instant (`held_until`), or for a send window to open.
        case scheduled, deferred
        /// In a digest that closes at `held_until` (`code`: its key is in `reason`).
        case batched
        /// Dropped by a limit on how often: per key in its pipeline, or per person across pipelines.
        case throttled, capped

        /// Waiting in the store for a timing rule (`EventHold`).
        public var isHeld: Bool { self == .scheduled || self == .deferred || self == .batched }
        /// Nothing more will happen to it but a replay.
        public var isFinal: Bool { !isHeld && self != .accepted && self != .processing }
    }

    public var pipeline: String
    public var eventID: String
    public var state: State
    /// The key of the source that accepted it.
    public var source: String?
    /// Who posted it (`RouteRequest.principal`); nil for events the daemon found itself.
    /// Only the same caller may read its status.
    public var caller: String?
    public var user: String?
    /// The stage that dropped or failed it, and the filter's code.
    public var stage: String?
    public var code: String?
    public var reason: String?
    public var recipients: [Delivery]
    /// Recipients left out of `recipients` (a broadcast keeps the first ones and every failure).
    public var omittedRecipients: Int
    public var traceID: String?
    public var acceptedAt: Double
    public var updatedAt: Double
    /// What it was made from, kept for a dead letter: a replay sends this again.
    public var input: Input?
    /// A broadcast's progress: how far it got while it runs or where it stopped early (a
    /// resumed run and a replay go on from there), or that every page went out. Nil for the
    /// events of one user.
    public var broadcast: BroadcastProgress?
    /// When a `scheduled` or `deferred` event comes back (UNIX seconds).
    public var heldUntil: Double?

    public struct Input: Sendable, Equatable {
        public var time: Double
        public var body: JSON
        /// A broadcast's audience (`Event.audience`): its replay goes to the same users.
        public var audience: Audience?

        public init(time: Double, body: JSON, audience: Audience? = nil) {
            self.time = time
            self.body = body
            self.audience = audience
        }
    }

    public init(
        pipeline: String,
        eventID: String,
        state: State,
        source: String? = nil,
        caller: String? = nil,
        user: String? = nil,
        stage: String? = nil,
        code: String? = nil,
        reason: String? = nil,
        recipients: [Delivery] = [],
        omittedRecipients: Int = 0,
        traceID: String? = nil,
        acceptedAt: Double,
        updatedAt: Double,
        input: Input? = nil,
        broadcast: BroadcastProgress? = nil
    ) {
        self.pipeline = pipeline
        self.eventID = eventID
        self.state = state
        self.source = source
        self.caller = caller
        self.user = user
        self.stage = stage
        self.code = code
        self.reason = reason
        self.recipients = recipients
        self.omittedRecipients = omittedRecipients
        self.traceID = traceID
        self.acceptedAt = acceptedAt
        self.updatedAt = updatedAt
        self.input = input
        self.broadcast = broadcast
    }

    /// The devices a replay sends to: those whose notification is unresolved, or every one the
    /// pipeline finds (nil) when the event failed before any was attempted.
    public var replayAddresses: Set<String>? {
        let unresolved = recipients.filter(\.isUnresolved)
        return unresolved.isEmpty ? nil : Set(unresolved.map(\.address))
    }

    /// The state its recipients' outcomes give: anything left to retry makes a dead letter.
    public static func state(of recipients: [Delivery]) -> State {
        if recipients.contains(where: \.isUnresolved) { return .deadLetter }
        let delivered = recipients.count { $0.outcome == .delivered }
        return delivered == recipients.count ? .delivered : delivered > 0 ? .partiallyDelivered : .failed
    }

    /// A replay's recipients after the earlier ones: a device's new outcome replaces its old.
    public static func merging(_ earlier: [Delivery], _ later: [Delivery]) -> [Delivery] {
        let replaced = Set(later.map(\.address))
        return earlier.filter { !replaced.contains($0.address) } + later
    }
}
