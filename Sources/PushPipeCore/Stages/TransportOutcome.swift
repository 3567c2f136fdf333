/// Every way a delivery attempt can end. The runtime, not the transport, decides what
/// follows: retry with backoff, prune the token, or raise a configuration error once.
public enum TransportOutcome: Sendable, Equatable {
    /// Accepted by the provider; `providerID` is its id (`apns-id`, FCM message `name`).
    case delivered(providerID: String?)
    /// Temporary failure; retry, no sooner than `after` seconds when the provider said so.
    case retryAfter(seconds: Double?, reason: ProviderReason)
    /// The token is dead. `since` (UNIX seconds) is when the provider last saw it valid:
    /// a token re-registered after that moment is kept.
    case dropToken(reason: ProviderReason, since: Double?)
    /// The request itself is wrong (credentials, topic, payload): retrying cannot help.
    case configError(reason: ProviderReason)

    /// The outcome without its details, as reports and records keep it.
    public var outcome: DeliveryOutcome {
        switch self {
        case .delivered: .delivered
        case .retryAfter: .retryAfter
        case .dropToken: .dropToken
        case .configError: .configError
        }
    }

    /// The outcome as a metric label.

    /// Why it was not delivered, for people.
    public var reason: String? { providerReason?.text }

    public var providerReason: ProviderReason? {
        switch self {
        case .delivered: nil
        case .retryAfter(_, let reason), .dropToken(let reason, _), .configError(let reason): reason
        }
    }
}
