/// A source that wants to know when a user registers a token (a poller checks a new user
/// right away instead of after a full interval).
public protocol RegistrationObserver: Sendable {
    func userRegistered(_ user: String) async
}

/// A stage that checks tokens before the register route stores them, where the core cannot:
/// a Web Push key must be a point on P-256, and the transport has the cryptography.
public protocol TokenValidator: Sendable {
    /// Throws `TokenRejected` naming the part of the token that is wrong; tokens it does not
    /// know pass.
    func validate(_ token: DeviceToken) throws
}

/// A token a stage refuses: `field` is the part of it (`keys.p256dh`), below the route's token field.
public struct TokenRejected: Error, Sendable {
    public var field: String
    public var message: String
    public init(field: String, _ message: String) {
        self.field = field
        self.message = message
    }
}

/// A stage that adds its own view of a user to the `diagnostics` route (a poller's last
/// check, the games it monitors, its last error).
public protocol DiagnosticsProvider: Sendable {
    func diagnostics(for user: String) async -> [String: JSON]
}
