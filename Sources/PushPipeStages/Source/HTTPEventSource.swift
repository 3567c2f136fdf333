import Logging
import PushPipe

/// Events posted by a backend over HTTP: the route is part of the source's configuration.
struct HTTPEventSource: Source {
    static let summary = "Accepts events as JSON on an authenticated HTTP route."

    /// Keys:
    /// - `path` (string, required): the route, e.g. `/api/notifications/events`.
    /// - `method` (one of POST, PUT; `POST`).
    /// - `auth` (object; `{type: none}`): `{type: token, token}` for a backend's shared secret.
    /// - `user_field` (string; `user`): body field naming the recipient (string or number).
    /// - `require_user` (boolean; true): reject events without a recipient; false sends them to every registered user.
    /// - `id_field` (string; none): body field used as the event id (must be unique); generated otherwise.
    /// - `wait` (boolean; false): answer 200 with the delivery report instead of 202 once queued.
    /// - `known_values` (map of lists; `{}`): e.g. `{type: [upvote, comment]}`; other values are accepted with a warning.
    struct Configuration: StageConfiguration {
        var knownValues: [String: [String]]
        var path: String
        var method: String
        var auth: JSON
        var userField: String
        var requireUser: Bool
        var idField: String?
        var wait: Bool

        static let schema = Schema([
            .required("path", .string, "The route, e.g. `/api/notifications/events`."),
            SchemaKey("method", .oneOf(["POST", "PUT"]), default: "POST", "HTTP method."),
            SchemaKey("auth", RouteAuthConfiguration.backendValueType, default: ["type": "none"], "`{type: token, token}` for the backend's shared secret."),
            SchemaKey("user_field", .string, default: "user", "Body field naming the recipient."),
            SchemaKey("require_user", .boolean, default: true, "Reject events without a recipient; false broadcasts them."),
            SchemaKey("id_field", .string, "Body field used as the event id; generated when absent."),
            SchemaKey("wait", .boolean, default: false, "Answer with the delivery report instead of 202 once queued."),
            SchemaKey("known_values", .map(.list(.string)), default: [:],
                      "Expected values per field; others are accepted with a warning (lists grow)."),
        ])
    }

    let configuration: Configuration
    let route: RouteDefinition

    init(configuration: Configuration, context: StageBuildContext) throws {
        guard configuration.path.hasPrefix("/") else {
            throw ConfigurationValueError(keyPath: "path", "'\(configuration.path)' is not a route path", expected: "a path starting with '/'")
        }
        self.configuration = configuration
        route = RouteDefinition(method: configuration.method, path: configuration.path,
                                authentication: RouteAuthConfiguration.backend(configuration.auth)) { request, routeContext in
            try await Self.accept(request, routeContext, configuration)
        }
    }

    var routes: [RouteDefinition] { [route] }

    func run(into sink: any EventSink, context: StageContext) async throws {
        // Events arrive through the route; the source itself has nothing to do.
        await untilCancelled()
    }

    static let logger = Logger(label: "pushpipe.http-event")

    static func accept(_ request: RouteRequest, _ context: RouteContext, _ configuration: Configuration) async throws -> RouteResponse {
        guard let body = request.body else { throw HTTPError.badRequest("the event must be a JSON object", field: "body") }
        var user: String?
        switch body[configuration.userField] {
        case .string(let value) where !value.isEmpty && value.count <= 128: user = value
        case .int(let value): user = String(value)
        case nil, .null?:
            if configuration.requireUser { throw HTTPError.badRequest("missing field '\(configuration.userField)'", field: configuration.userField) }
        case let other?:
            throw HTTPError.unprocessable("'\(configuration.userField)' must be a string or a number, found \(other.typeName)",
                                          field: configuration.userField)
        }
        var id = Event.makeID()
        if let idField = configuration.idField, let value = body[idField] {
            guard let text = value.textValue, !text.isEmpty, text.count <= 128 else {
                throw HTTPError.badRequest("'\(idField)' must be a short string", field: idField)
            }
            id = text
        }
        for (field, known) in configuration.knownValues {
            if let value = body[field]?.textValue, !known.contains(value) {
                logger.warning("event \(id): \(field) '\(value)' is not one of \(known.joined(separator: ", ")); accepted")
            }
        }
        let event = Event(id: id, pipeline: context.pipeline, user: user, body: body)
        if configuration.wait {
            let report = try await context.sink.submitAndWait(event)
            return RouteResponse(try JSON(encoding: report))
        }
        try await context.sink.submit(event)
        return RouteResponse(status: 202, ["status": "accepted", "event_id": .string(id)])
    }
}
