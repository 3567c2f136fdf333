import PostgresNIO
import PushPipeCore

/// The store could not be connected to at all: told with the location (its password masked)
/// and the reason, since PostgresNIO's own description hides everything to be safe, which
/// leaves an operator with a wrong certificate or password nothing to act on.
public struct StoreConnectionError: Error, CustomStringConvertible {
    public var location: String
    public var reason: String

    init(location: PostgresLocation, cause: any Error) {
        self.location = location.description
        reason = Self.reason(of: cause)
    }

    public var description: String { "cannot connect to the store \(location): \(reason)" }

    /// The server's message, or the code and the underlying error; never the statement or its
    /// values (a startup connection has none, but the rule is the same everywhere).
    static func reason(of error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let message = error.serverInfo?[.message] {
            return "the server says: \(message)" + (error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? "")
        }
        if error.code == .sslUnsupported { return "the server does not offer TLS, which the sslmode requires" }
        return error.underlying.map { "\(error.code): \($0)" } ?? "\(error.code)"
    }
}
