import Logging

/// One HTTP route a pipeline serves: from its `routes:` list or from one of its stages.
public struct RouteDefinition: Sendable {
    public var method: String
    /// `/diagnostics/:user_id` style: `:name` segments become path parameters.
    public var path: String { didSet { segments = path.split(separator: "/") } }
    public var authentication: RouteAuthentication
    /// How often it may be called, and how large a body may be (the host enforces them).
    public var limits: RouteLimits
    /// What it takes and answers (`pushpipe openapi`).
    public var contract: RouteContract
    public var handler: @Sendable (RouteRequest, RouteContext) async throws -> RouteResponse

    public init(
        method: String,
        path: String,
        authentication: RouteAuthentication = .none,
        limits: RouteLimits = RouteLimits(),
        contract: RouteContract = .unspecified,
        handler: @escaping @Sendable (RouteRequest, RouteContext) async throws -> RouteResponse
    ) {
        self.contract = contract
        self.method = method.uppercased()
        self.path = path
        self.segments = path.split(separator: "/")
        self.authentication = authentication
        self.limits = limits
        self.handler = handler
    }

    /// The path split once: every request is matched against every route's.
    private(set) var segments: [Substring]
    var parameterCount: Int { segments.filter { $0.hasPrefix(":") }.count }

    /// Path parameters when `path` matches this route's pattern, else nil.
    func match(_ requestSegments: [Substring]) -> [String: String]? {
        let pattern = segments
        guard pattern.count == requestSegments.count else { return nil }
        var parameters: [String: String] = [:]
        for (expected, actual) in zip(pattern, requestSegments) {
            if expected.hasPrefix(":") {
                guard let decoded = String(actual).removingPercentEncoding, !decoded.isEmpty else { return nil }
                parameters[String(expected.dropFirst())] = decoded
            } else if expected != actual {
                return nil
            }
        }
        return parameters
    }

    /// Two routes collide when a request could match both.
    func collides(with other: RouteDefinition) -> Bool {
        guard method == other.method, segments.count == other.segments.count else { return false }
        return zip(segments, other.segments).allSatisfy { $0 == $1 || $0.hasPrefix(":") || $1.hasPrefix(":") }
    }
}

/// A parsed request: authentication already checked, body already parsed as JSON.
public struct RouteRequest: Sendable {
    public var method: String
    public var path: String
    public var parameters: [String: String]
    public var query: [String: String]
    /// `nil` for requests without a body.
    public var body: JSON?
    /// The user named by the request's credentials (the JWT `sub`), when the route authenticates users.
    public var authenticatedUser: String?
    /// Who the credentials say is calling (never the credential itself): what an idempotency
    /// key is scoped to. Empty for routes without authentication.
    public var principal: String
    /// The `Idempotency-Key` header (draft-ietf-httpapi-idempotency-key-header), as sent.
    public var idempotencyKey: String?
    /// The W3C `traceparent` header, as sent: an event it posts continues the caller's trace.
    public var traceParent: String?

    public init(
        method: String,
        path: String,
        parameters: [String: String] = [:],
        query: [String: String] = [:],
        body: JSON? = nil,
        authenticatedUser: String? = nil,
        principal: String = "",
        idempotencyKey: String? = nil,
        traceParent: String? = nil
    ) {
        self.principal = principal
        self.idempotencyKey = idempotencyKey
        self.traceParent = traceParent
        self.method = method
        self.path = path
        self.parameters = parameters
        self.query = query
        self.body = body
        self.authenticatedUser = authenticatedUser
    }
}

public struct RouteResponse: Sendable {
    public var status: Int
    public var body: JSON
    /// Headers besides the content type (`Idempotent-Replayed`).
    public var headers: [String: String]

    public init(status: Int = 200, _ body: JSON, headers: [String: String] = [:]) {
        self.status = status
        self.body = body
        self.headers = headers
    }
}

/// What a route handler may use: the pipeline's store, its event sink, and its stages'
/// registration and diagnostics hooks.
public struct RouteContext: Sendable {
    public var pipeline: String
    public var store: any Store
    public var sink: any EventSink
    public var registrationObservers: [any RegistrationObserver]
    public var diagnosticsProviders: [any DiagnosticsProvider]
    /// The pipeline's stages that check tokens before they are stored.
    public var tokenValidators: [any TokenValidator] = []
    /// The pipeline's logger (its level and metadata).
    public var logger: Logger
    /// The pipeline's `idempotency:` key.
    public var idempotency: IdempotencyPolicy = .defaults
    /// A dry run's routes store what apps register but reach no provider.
    public var mode: RunMode = .live

    /// The pipeline's part of the store, named by concern as a stage's context offers it.
    public var registrations: any PipelineStore { store.pipeline(pipeline) }
    public var deliveries: any PipelineStore { store.pipeline(pipeline) }
    public var queuedEvents: any PipelineStore { store.pipeline(pipeline) }
    public var eventRecords: any EventRecordStore { store }
    public var idempotencyKeys: any IdempotencyStore { store }

    public init(
        pipeline: String,
        store: any Store,
        sink: any EventSink,
        registrationObservers: [any RegistrationObserver] = [],
        diagnosticsProviders: [any DiagnosticsProvider] = [],
        logger: Logger = Logger(label: "pushpipe.route")
    ) {
        self.pipeline = pipeline
        self.logger = logger
        self.store = store
        self.sink = sink
        self.registrationObservers = registrationObservers
        self.diagnosticsProviders = diagnosticsProviders
    }
}
