/// How a notification's delivery counts in metrics and on the status page: a `DeliveryOutcome`,
/// or one of the two ends that made no attempt. The raw value is the `outcome` label.
public enum ReportedOutcome: String, Sendable, CaseIterable {
    case delivered
    /// Attempts ran out while the provider asked for a retry.
    case retry
    case deadToken = "dead_token"
    case configError = "config_error"
    /// The transport refused the notification before sending it (not a token of its kind, too large).
    case refused
    /// A dry run: printed, not sent.
    case dryRun = "dry_run"

    public init(_ outcome: DeliveryOutcome) {
        switch outcome {
        case .delivered: self = .delivered
        case .retryAfter: self = .retry
        case .dropToken: self = .deadToken
        case .configError: self = .configError
        }
    }

    /// Went where it was meant to: accepted, or printed by a dry run.
    public var isSuccess: Bool { self == .delivered || self == .dryRun }

    /// An attempt was made, so the event's latency counts.
    var wasAttempted: Bool { self != .dryRun && self != .refused }
}
