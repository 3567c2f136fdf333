/// A stage that needs something before it can work, such as credentials: `/readyz` asks it,
/// so a load balancer or an orchestrator holds traffic back from a daemon that cannot send.
public protocol ReadinessReporting: Sendable {
    /// Nil when ready; otherwise why not, for the operator (never key material).
    var notReadyReason: String? { get }
}

/// A transport that keeps its own connections to the provider (the connections gauge).
public protocol ConnectionReporting: Sendable {
    var openConnections: Int { get }
}
