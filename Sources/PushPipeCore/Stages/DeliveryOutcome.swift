/// How one notification's delivery ended, as every view of it tells it: the report, the
/// stored delivery row, the event record's recipient, the webhook outcome. The raw value is
/// what stores keep and routes show.
public enum DeliveryOutcome: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// Accepted by the provider.
    case delivered
    /// Attempts ran out while the provider asked for a retry.
    case retryAfter = "retry-after"
    /// The token is dead; it was removed unless registered again since.
    case dropToken = "drop-token"
    /// The request itself was wrong (credentials, topic, payload), or the transport refused it.
    case configError = "config-error"

    /// As stores keep it and people read it.
    public var description: String { rawValue }

    /// Worth another attempt (a replay): the provider neither took it nor declared the token dead.
    public var isUnresolved: Bool { self == .retryAfter || self == .configError }
}
