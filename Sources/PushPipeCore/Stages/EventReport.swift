/// What became of one event: filtered, or rendered and delivered (or not) per token.
public struct EventReport: Sendable, Codable {
    public enum Status: String, Sendable, Codable, CaseIterable {
        case delivered, filtered, failed, partial
        case noRecipients = "no-recipients"
        /// Waiting in the store (`EventHold`): not sent yet, and not lost.
        case scheduled, deferred
        /// In a digest, sent with it when it closes.
        case batched
        /// Dropped by a limit on how often (`DropKind`).
        case throttled, capped

        /// Waiting in the store for a timing rule (`EventHold`): not its outcome yet.
        public var isHeld: Bool { self == .scheduled || self == .deferred || self == .batched }
    }

    public var eventID: String
    public var pipeline: String
    public var user: String?
    public var status: Status
    public var reason: String?
    /// The stage that dropped or failed the event, and a filter's code (`duplicate`, …).
    public var stage: String?
    public var code: String?
    public var deliveries: [DeliveryReport]
    /// The first deliveries only (a broadcast may have 100,000): how many more there were.
    public var omittedDeliveries: Int?
    /// A held event's instant (`scheduled`, `deferred`), UNIX seconds: when it comes back.
    public var heldUntil: Double?
    /// Who held it (`EventHold.holder`): what it carries when it comes back. Not shown.
    public var holder: String? = nil
    /// Its queue item (`Event.queueItem`) went in the commit of its outcome, or of the held
    /// copy that took its place, so its completion has nothing left to remove. Not shown.
    package var leftQueue = false

    public init(
        eventID: String,
        pipeline: String,
        user: String?,
        status: Status,
        reason: String? = nil,
        stage: String? = nil,
        code: String? = nil,
        deliveries: [DeliveryReport] = [],
        omittedDeliveries: Int? = nil
    ) {
        self.stage = stage
        self.code = code
        self.eventID = eventID
        self.pipeline = pipeline
        self.user = user
        self.status = status
        self.reason = reason
        self.deliveries = deliveries
        self.omittedDeliveries = omittedDeliveries
    }

    enum CodingKeys: String, CodingKey {
        case eventID = "event_id"
        case pipeline, user, status, reason, stage, code, deliveries
        case omittedDeliveries = "omitted_deliveries"
        case heldUntil = "held_until"
    }
}

extension EventReport {
    /// As the CLI prints it: the status, when a held event comes back, and why.
    public var summary: String {
        let until = heldUntil.map { " until \(EventRecord.timestamp($0))" } ?? ""
        return "\(status.rawValue)\(until)\(reason.map { " (\($0))" } ?? "")"
    }
}

/// A delivery as an event's report shows it (`Delivery`'s view for a dry run, a test, a log).
public struct DeliveryReport: Sendable, Codable {
    public var user: String
    public var tokenKind: String
    /// Masked: reports end up in HTTP responses and logs.
    public var token: String
    public var outcome: DeliveryOutcome
    public var reason: String?
    /// The reason's code (`ProviderReason.code`).
    public var reasonCode: String?
    public var providerID: String?
    public var attempts: Int
    public var payload: JSON

    /// A delivery as a report shows it: its token masked, with the payload it carried.
    public init(_ delivery: Delivery, payload: JSON) {
        user = delivery.user
        tokenKind = delivery.tokenKind
        token = TokenMask.mask(delivery.token)
        outcome = delivery.outcome
        reason = delivery.reason
        providerID = delivery.providerID
        attempts = delivery.attempts
        self.payload = payload
        reasonCode = delivery.reasonCode
    }

    enum CodingKeys: String, CodingKey {
        case user
        case tokenKind = "token_kind"
        case token, outcome, reason
        case reasonCode = "reason_code"
        case providerID = "provider_id"
        case attempts, payload
    }
}
