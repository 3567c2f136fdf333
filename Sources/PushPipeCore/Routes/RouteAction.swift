/// What a route in a pipeline's `routes:` list does: a kind of route, registered like a stage
/// type (`StageRegistry`), by the core or by any module. Each kind documents its keys like a
/// stage does, and builds its routes from its validated configuration.
public struct RouteAction: Sendable {
    public var name: String
    public var summary: String
    /// The method of its one route unless `method:` says; empty for a kind that serves several.
    public var defaultMethod: String
    public var schema: Schema
    /// The routes an entry of this kind serves, and what runs beside them.
    let serve: @Sendable (JSON, StageBuildContext) throws -> ServedRoutes

    /// A kind that serves one route, at the entry's `path` and `method`: `make` gives its handler
    /// and `contract` what it takes and answers (OpenAPI).
    public init(
        name: String,
        summary: String,
        defaultMethod: String,
        schema: Schema,
        contract: @escaping @Sendable (JSON) throws -> RouteContract = { _ in .unspecified },
        make: @escaping @Sendable (JSON) throws -> @Sendable (RouteRequest, RouteContext) async throws -> RouteResponse
    ) {
        self.name = name
        self.summary = summary
        self.defaultMethod = defaultMethod
        self.schema = schema
        serve = { configuration, _ in
            let handler = try make(configuration)
            var contract = try contract(configuration)
            if contract.summary.isEmpty { contract.summary = summary }
            return ServedRoutes(routes: [
                RouteDefinition(
                    method: configuration["method"]?.stringValue ?? defaultMethod,
                    path: configuration["path"]?.stringValue ?? "",
                    authentication: try RouteAuthConfiguration.make(configuration["auth"]),
                    limits: try RouteLimits.parse(configuration["limits"], defaults: RouteLimits.appDefaults),
                    contract: contract,
                    handler: handler
                )
            ])
        }
    }

    /// A kind that serves routes of its own under the entry's `path` (several methods, each
    /// with its contract), and may run something beside them (a client its handlers share).
    public init(name: String, summary: String, schema: Schema, serve: @escaping @Sendable (JSON, StageBuildContext) throws -> ServedRoutes) {
        self.name = name
        self.summary = summary
        self.defaultMethod = ""
        self.schema = schema
        self.serve = { configuration, context in
            if configuration["method"] != nil {
                throw ConfigurationValueError(keyPath: "method", "\(name) serves its own methods", expected: "no method key")
            }
            return try serve(configuration, context)
        }
    }

    /// The core's route kinds, their tokens in one of `formats`.
    public static func builtins(formats: TokenFormats) -> [RouteAction] {
        [.register(formats: formats), .settings, .history, .usersByToken(formats: formats), .diagnostics, .cancel]
    }

    /// What a `routes:` entry declares, from its validated configuration (the loader's checks
    /// of the path and the secret come first).
    public func routes(_ configuration: JSON, context: StageBuildContext) throws -> ServedRoutes {
        try (Self.commonSchema + schema).checkRanges(configuration)
        return try serve(configuration, context)
    }

    /// The one route of a kind that serves one.
    public func route(_ configuration: JSON) throws -> RouteDefinition {
        let served = try routes(configuration, context: StageBuildContext(pipeline: "", stage: "route"))
        guard let route = served.routes.first, served.routes.count == 1 else {
            throw ConfigurationValueError(keyPath: "action", "\(name) serves \(served.routes.count) routes", expected: "a kind that serves one")
        }
        return route
    }

    /// Keys every route has.
    public static let commonSchema = Schema([
        .required("path", .string, "URL path; `:name` segments are parameters, e.g. `/check/:user_id`."),
        SchemaKey("method", .oneOf(["GET", "POST", "PUT", "PATCH", "DELETE"]), "HTTP method; each action has a default."),
        SchemaKey(
            "auth",
            RouteAuthConfiguration.valueType,
            default: ["type": "none"],
            "How callers authenticate: `none`, `token`, `jwt`, or `identity` (an identity URL says whose the bearer credential is, and a user "
                + "route acts only for that user: `docs/operations.md`)."
        ),
        {
            // No defaults here: what a limit left out is depends on who calls the kind's routes.
            var limits = RouteLimits.schemaKey(defaults: [:])
            limits.defaultValue = nil
            limits.doc =
                "Request limits of the route. What it leaves out is an app's (`per_client: 50/s`, `per_principal: 5/s`, `burst: 20`, "
                + "`max_body: 16384`), or a backend's for a kind that backends call (`apns.channels`: no rate, `max_body: 65536`)."
            return limits
        }(),
    ])

    /// The schema of "a route": its `action` chooses one of `actions`.
    public static func valueType(_ actions: [RouteAction]) -> ValueType {
        .tagged(
            Tagged(
                discriminator: "action",
                noun: "route action",
                variants: Dictionary(actions.map { ($0.name, $0.schema) }, uniquingKeysWith: { first, _ in first }),
                common: commonSchema
            )
        )
    }

    /// Keys shared by actions that act for one user.
    static let userKeys = [
        SchemaKey("user_field", .string, "Body field naming the user (string or number); omit when `user_param` or a JWT names the user."),
        SchemaKey("user_param", .string, "Path parameter naming the user."),
        SchemaKey(
            "user_format",
            .oneOf(UserIDFormat.allCases.map(\.rawValue)),
            default: "text",
            "What a valid user id is: `text` (a string only) or `digits` (a string of digits or a JSON number)."
        ),
    ]
}
