/// What became of one notification: the one value the runtime makes of a transport's answer.
/// The store's delivery row, the event record's recipients, the status route's and a webhook's
/// view and the report a dry run prints are all made of it where they leave, so no outcome is
/// restated, and none travels as text. The token is as stored: every view that shows it masks it.
public struct Delivery: Sendable, Equatable {
    public var user: String
    public var tokenKind: String
    public var token: String
    public var transport: String
    public var outcome: DeliveryOutcome
    public var providerID: String?
    public var attempts: Int
    public var reason: String?
    /// The reason's code (`ProviderReason.code`), parsed once by the transport: what an app
    /// or a webhook receiver decides on.
    public var reasonCode: String?
    public var at: Double

    public init(
        user: String,
        tokenKind: String,
        token: String,
        transport: String,
        outcome: DeliveryOutcome,
        providerID: String? = nil,
        attempts: Int,
        reason: String? = nil,
        reasonCode: String? = nil,
        at: Double
    ) {
        self.user = user
        self.tokenKind = tokenKind
        self.token = token
        self.transport = transport
        self.outcome = outcome
        self.providerID = providerID
        self.attempts = attempts
        self.reason = reason
        self.reasonCode = reasonCode
        self.at = at
    }

    /// A transport's final answer for `token` after `attempts`, at `at`.
    public init(_ outcome: TransportOutcome, to token: DeviceToken, transport: String, attempts: Int, at: Double) {
        var providerID: String?
        if case .delivered(let id) = outcome { providerID = id }
        self.init(
            user: token.user,
            tokenKind: token.kind,
            token: token.value,
            transport: transport,
            outcome: outcome.outcome,
            providerID: providerID,
            attempts: attempts,
            reason: outcome.reason,
            reasonCode: outcome.providerReason?.code,
            at: at
        )
    }

    /// Worth another attempt: the provider asked for a retry until attempts ran out, or the
    /// notification hit a configuration error. A dead token is not.
    public var isUnresolved: Bool { outcome.isUnresolved }

    /// The same device: a replay's outcome for it replaces the earlier one.
    var address: String { tokenKind + ":" + token }
}
