/// A source that wants to know when a user registers a token (a poller checks a new user
/// right away instead of after a full interval).
public protocol RegistrationObserver: Sendable {
    func userRegistered(_ user: String) async
}

/// A stage that adds its own view of a user to the `diagnostics` route (a poller's last
/// check, the games it monitors, its last error).
public protocol DiagnosticsProvider: Sendable {
    func diagnostics(for user: String) async -> [String: JSON]
}
