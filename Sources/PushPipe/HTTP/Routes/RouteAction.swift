/// What a route in a pipeline's `routes:` list does. Each action documents its keys like a
/// stage does, and builds a handler from its validated configuration.
public struct RouteAction: Sendable {
    public var name: String
    public var summary: String
    public var defaultMethod: String
    public var schema: Schema
    let make: @Sendable (JSON) throws -> @Sendable (RouteRequest, RouteContext) async throws -> RouteResponse

    public init(name: String, summary: String, defaultMethod: String, schema: Schema,
                make: @escaping @Sendable (JSON) throws -> @Sendable (RouteRequest, RouteContext) async throws -> RouteResponse) {
        self.name = name
        self.summary = summary
        self.defaultMethod = defaultMethod
        self.schema = schema
        self.make = make
    }

    public static let builtins: [RouteAction] = [.register, .settings, .history, .usersByToken, .diagnostics]

    /// Keys every route has.
    public static let commonSchema = Schema([
        .required("path", .string, "URL path; `:name` segments are parameters, e.g. `/check/:user_id`."),
        SchemaKey("method", .oneOf(["GET", "POST", "PUT", "PATCH", "DELETE"]), "HTTP method; each action has a default."),
        SchemaKey("auth", RouteAuthConfiguration.valueType, default: ["type": "none"], "How callers authenticate: `none`, `token` or `jwt`."),
    ])

    public static var valueType: ValueType {
        .tagged(Tagged(discriminator: "action", noun: "route action",
                       variants: Dictionary(uniqueKeysWithValues: builtins.map { ($0.name, $0.schema) }), common: commonSchema))
    }

    /// Keys shared by actions that act for one user.
    static let userKeys = [
        SchemaKey("user_field", .string, "Body field naming the user (string or number); omit when `user_param` or a JWT names the user."),
        SchemaKey("user_param", .string, "Path parameter naming the user."),
    ]
}

/// Who a request acts for, from the body, the path or the credentials, in that order.
struct UserSelector: Sendable {
    var field: String?
    var parameter: String?

    init(_ configuration: JSON) {
        field = configuration["user_field"]?.stringValue
        parameter = configuration["user_param"]?.stringValue
    }

    func user(in request: RouteRequest) throws -> String {
        if let field {
            guard let value = request.body?[field], value != .null else { throw HTTPError.badRequest("missing field '\(field)'", field: field) }
            let text: String
            switch value {
            case .string(let string): text = string.trimmingCharacters(in: .whitespaces)
            case .int(let number): text = String(number)
            default: throw HTTPError.unprocessable("'\(field)' must be a string or a number, found \(value.typeName)", field: field)
            }
            guard !text.isEmpty, text.count <= 128 else { throw HTTPError.badRequest("'\(field)' must be 1 to 128 characters", field: field) }
            return text
        }
        if let parameter, let value = request.parameters[parameter] {
            guard value.count <= 128 else { throw HTTPError.badRequest("'\(parameter)' is too long", field: parameter) }
            return value
        }
        if let user = request.authenticatedUser { return user }
        throw HTTPError.unauthorized()
    }

    /// A route acting for a user must have a way to name one.
    func check(authenticates: Bool) throws {
        if field == nil && parameter == nil && !authenticates {
            throw ConfigurationValueError(keyPath: "user_field", "this route has no way to tell the user",
                                          expected: "`user_field`, `user_param`, or `auth: {type: jwt}`")
        }
    }
}
