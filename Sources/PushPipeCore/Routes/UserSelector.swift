/// Who a request acts for, from the body, the path or the credentials, in that order: one
/// place, so every user route (register, settings, history, diagnostics) names its user the
/// same way, and an `identity` route refuses a user other than the credential's owner (403).
struct UserSelector: Sendable {
    var field: String?
    var parameter: String?
    var format: UserIDFormat
    /// `auth: {type: identity}`: the request may name only the user its credential belongs to.
    var ownerOnly: Bool

    init(_ configuration: JSON) {
        field = configuration["user_field"]?.stringValue
        parameter = configuration["user_param"]?.stringValue
        format = configuration["user_format"]?.stringValue.flatMap(UserIDFormat.init(rawValue:)) ?? .text
        ownerOnly = RouteAuthConfiguration.requiresOwner(configuration["auth"])
    }

    /// The body's user property, when the body names the user.
    func bodyProperty() -> [String: JSON] {
        guard let field else { return [:] }
        return [field: format.schema]
    }

    /// The path parameter naming the user, when the path does.
    func pathParameter() -> [String: JSON] {
        guard field == nil, let parameter else { return [:] }
        return [parameter: format.pathSchema]
    }

    func user(in request: RouteRequest) throws -> String {
        if let field { return try owned(format.user(from: request.body?[field], field: field), request, field: field) }
        if let parameter, let value = request.parameters[parameter] {
            return try owned(format.user(fromText: value, field: parameter), request, field: parameter)
        }
        if let user = request.authenticatedUser { return user }
        throw RouteError.unauthorized()
    }

    /// `user`, unless the route acts only for the credential's owner and that is someone else.
    private func owned(_ user: String, _ request: RouteRequest, field: String) throws -> String {
        guard ownerOnly, user != request.authenticatedUser else { return user }
        throw RouteError(403, "the credential belongs to another user than '\(user)'", field: field)
    }

    /// A route acting for a user must have a way to name one.
    func check(authenticates: Bool) throws {
        if field == nil && parameter == nil && !authenticates {
            throw ConfigurationValueError(
                keyPath: "user_field",
                "this route has no way to tell the user",
                expected: "`user_field`, `user_param`, or `auth: {type: jwt}`"
            )
        }
    }
}
