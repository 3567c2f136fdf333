/// What a route takes and answers, as JSON Schemas: `pushpipe openapi` publishes them, so app
/// developers can generate clients, and a contract test (schemathesis) holds the daemon to them.
/// Each route kind and each stage that serves a route says it where it builds the route.
public struct RouteContract: Sendable {
    public var summary: String
    /// The request body's schema; nil: the route takes none.
    public var body: JSON?
    /// Query parameters and their schemas.
    public var query: [String: JSON]
    /// Path parameters whose values are narrower than any string (a user id of digits, a token).
    public var path: [String: JSON]
    /// The success answers: status → the body's schema.
    public var responses: [Int: JSON]
    /// Headers a success answer carries (`Location` of a 202), by name, with a description.
    public var responseHeaders: [String: String]
    /// Refusals of this kind's own, by status, with what each means here (a 409 that is not an
    /// Idempotency-Key's, a 502 from a provider): they replace the generic description.
    public var errors: [Int: String]

    public init(
        summary: String,
        body: JSON? = nil,
        query: [String: JSON] = [:],
        path: [String: JSON] = [:],
        responses: [Int: JSON] = [200: RouteContract.object],
        responseHeaders: [String: String] = [:],
        errors: [Int: String] = [:]
    ) {
        self.path = path
        self.summary = summary
        self.body = body
        self.query = query
        self.responses = responses
        self.responseHeaders = responseHeaders
        self.errors = errors
    }

    /// Any JSON object.
    public static let object: JSON = ["type": "object"]
    public static let string: JSON = ["type": "string"]
    public static let nullableString: JSON = ["type": ["string", "null"]]

    /// An object with these properties (other properties allowed), these required.
    public static func object(_ properties: [String: JSON], required: [String] = [], minProperties: Int? = nil) -> JSON {
        var schema: [String: JSON] = ["type": "object", "properties": .object(properties)]
        if !required.isEmpty { schema["required"] = .array(required.sorted().map(JSON.string)) }
        if let minProperties { schema["minProperties"] = .int(Int64(minProperties)) }
        return .object(schema)
    }

    /// A route that documents nothing more: an object in, an object out.
    public static let unspecified = RouteContract(summary: "")
}
