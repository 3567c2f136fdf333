/// A request a route refuses: the app host answers it as `{"error": message, "field": field}` with `status`.
public struct RouteError: Error, Sendable, Equatable {
    public var status: Int
    public var message: String
    public var field: String?
    /// Seconds until asking again makes sense (`Retry-After`): a 429's, a 503's.
    public var retryAfter: Int?

    public init(_ status: Int, _ message: String, field: String? = nil, retryAfter: Int? = nil) {
        self.status = status
        self.message = message
        self.field = field
        self.retryAfter = retryAfter
    }

    public var body: JSON { ["error": .string(message), "field": field.map(JSON.string) ?? .null] }

    public static func badRequest(_ message: String, field: String? = nil) -> RouteError { RouteError(400, message, field: field) }
    public static func unauthorized(_ message: String = "missing or invalid credentials") -> RouteError {
        RouteError(401, message, field: "authorization")
    }
    public static func notFound(_ message: String, field: String? = nil) -> RouteError { RouteError(404, message, field: field) }
    public static func unprocessable(_ message: String, field: String?) -> RouteError { RouteError(422, message, field: field) }
}
