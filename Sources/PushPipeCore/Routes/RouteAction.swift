/// What a route in a pipeline's `routes:` list does. Each action documents its keys like a
/// stage does, and builds a handler from its validated configuration.
public struct RouteAction: Sendable {
    public var name: String
    public var summary: String
    public var defaultMethod: String
    public var schema: Schema
    /// What a route of this kind, configured so, takes and answers.
    let contract: @Sendable (JSON) -> RouteContract
    let make: @Sendable (JSON) throws -> @Sendable (RouteRequest, RouteContext) async throws -> RouteResponse

    public init(name: String, summary: String, defaultMethod: String, schema: Schema,
                contract: @escaping @Sendable (JSON) -> RouteContract = { _ in .unspecified },
                make: @escaping @Sendable (JSON) throws -> @Sendable (RouteRequest, RouteContext) async throws -> RouteResponse) {
        self.contract = contract
        self.name = name
        self.summary = summary
        self.defaultMethod = defaultMethod
        self.schema = schema
        self.make = make
    }

    /// The core's route kinds, their tokens in one of `formats`.
    public static func builtins(formats: TokenFormats) -> [RouteAction] {
        [.register(formats: formats), .settings, .history, .usersByToken(formats: formats), .diagnostics]
    }

    /// The route a `routes:` entry declares, from its validated configuration (the loader's
    /// checks of the path and the secret come first).
    public func route(_ configuration: JSON) throws -> RouteDefinition {
        let handler = try make(configuration)
        var contract = contract(configuration)
        if contract.summary.isEmpty { contract.summary = summary }
        return RouteDefinition(method: configuration["method"]?.stringValue ?? defaultMethod, path: configuration["path"]?.stringValue ?? "",
                               authentication: try RouteAuthConfiguration.make(configuration["auth"]),
                               limits: try RouteLimits.parse(configuration["limits"], defaults: RouteLimits.appDefaults),
                               contract: contract, handler: handler)
    }

    /// Keys every route has.
    public static let commonSchema = Schema([
        .required("path", .string, "URL path; `:name` segments are parameters, e.g. `/check/:user_id`."),
        SchemaKey("method", .oneOf(["GET", "POST", "PUT", "PATCH", "DELETE"]), "HTTP method; each action has a default."),
        SchemaKey("auth", RouteAuthConfiguration.valueType, default: ["type": "none"],
                  "How callers authenticate: `none`, `token`, `jwt`, or `identity` (an identity URL says whose the bearer credential is, and a user route acts only for that user: `docs/operations.md`)."),
        RouteLimits.schemaKey(defaults: RouteLimits.appDefaults),
    ])

    /// The schema of "a route": its `action` chooses one of `actions`.
    public static func valueType(_ actions: [RouteAction]) -> ValueType {
        .tagged(Tagged(discriminator: "action", noun: "route action",
                       variants: Dictionary(actions.map { ($0.name, $0.schema) }, uniquingKeysWith: { first, _ in first }), common: commonSchema))
    }

    /// Keys shared by actions that act for one user.
    static let userKeys = [
        SchemaKey("user_field", .string, "Body field naming the user (string or number); omit when `user_param` or a JWT names the user."),
        SchemaKey("user_param", .string, "Path parameter naming the user."),
        SchemaKey("user_format", .oneOf(UserIDFormat.allCases.map(\.rawValue)), default: "text",
                  "What a valid user id is: `text` (a string only) or `digits` (a string of digits or a JSON number, e.g. OGS)."),
    ]
}
