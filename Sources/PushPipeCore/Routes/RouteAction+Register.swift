extension RouteAction {
    /// Stores a token in one of `formats` (a route's `token_format`, `hex` unless it says).
    public static func register(formats: TokenFormats) -> RouteAction {
        let schema = Schema(
            userKeys + [
                .required(
                    "token_kind",
                    .string,
                    "Kind the token is stored as (`device`, `push-to-start`, ...): the renderer asks for tokens of a kind."
                ),
                .required("token_field", .string, "Body field holding the token."),
                TokenFormats.schemaKey(
                    formats.all,
                    default: "hex",
                    "How the token is written; a format whose token names its scope replaces the token of that scope."
                ),
                SchemaKey("replace", .boolean, default: false, "Whether the token replaces the user's earlier tokens of this kind (and scope)."),
                SchemaKey("scope_field", .string, "Body field scoping the token (a Live Activity's id): one token per scope."),
                SchemaKey("environment", .string, "The provider's environment recorded with the token (`production`, `sandbox`)."),
                SchemaKey(
                    "time_zone_field",
                    .string,
                    "Body field with the device's IANA time zone (optional in a request; 422 when it is not one): kept as the user's "
                        + "`device_time_zone` setting, which timing filters read before the user's own `time_zone`."
                ),
                SchemaKey(
                    "max_tokens_per_user",
                    .integer,
                    default: 10,
                    in: 1...Double.infinity,
                    "Tokens of this kind a user keeps; registering one more removes the least recently registered of those never delivered to, "
                        + "or, when every other one was delivered to, the least recently registered."
                ),
            ]
        )
        /// The configuration as its schema says, defaults filled in, and its format.
        @Sendable func registration(_ json: JSON) throws -> (Registration, any TokenFormat) {
            let registration = try schema.decode(Registration.self, from: json)
            return (registration, try formats.configured(registration.tokenFormat))
        }
        return RouteAction(
            name: "register",
            summary: "Stores a push token of one kind for a user.",
            defaultMethod: "POST",
            schema: schema,
            contract: { configuration in
                let users = UserSelector(configuration)
                let (registration, format) = try registration(configuration)
                var properties = users.bodyProperty()
                properties[registration.tokenField] = format.schema
                var required = Array(properties.keys)
                if let scope = registration.scopeField {
                    properties[scope] = ["type": "string", "minLength": 1, "maxLength": 256]
                    required.append(scope)
                }
                if let zone = registration.timeZoneField {
                    properties[zone] = ["type": "string", "maxLength": 64, "description": "The device's IANA time zone, such as Europe/Berlin."]
                }
                return RouteContract(
                    summary: "Registers a push token for a user.",
                    body: RouteContract.object(properties, required: required),
                    path: users.pathParameter(),
                    responses: [
                        200: RouteContract.object(
                            [
                                "status": RouteContract.string, "user_id": RouteContract.string,
                                "token_kind": RouteContract.string, "token_preview": RouteContract.string,
                            ],
                            required: ["status", "user_id", "token_kind", "token_preview"]
                        )
                    ]
                )
            }
        ) { configuration in
            let users = UserSelector(configuration)
            try users.check(authenticates: RouteAuthConfiguration.authenticatesUsers(configuration["auth"]))
            let (registration, format) = try registration(configuration)
            let (kind, field, scopeField, zoneField) = (
                registration.tokenKind, registration.tokenField, registration.scopeField, registration.timeZoneField
            )
            let replace = format.carriesScope || registration.replace
            return { request, context in
                let user = try users.user(in: request)
                var (token, scope) = try format.registration(request.body?[field], field: field)
                if scope == nil, let scopeField {
                    guard let value = request.body?[scopeField]?.stringValue, !value.isEmpty, value.count <= 256 else {
                        throw RouteError.badRequest("missing or invalid field '\(scopeField)'", field: scopeField)
                    }
                    scope = value
                }
                // Checked before anything is stored: a bad zone changes nothing.
                let zone = try zoneField.flatMap { field -> String? in
                    guard let value = request.body?[field], value != .null else { return nil }
                    guard let name = value.stringValue, TimeZoneName.zone(name) != nil else {
                        throw RouteError.unprocessable("'\(field)' must be \(TimeZoneName.expected)", field: field)
                    }
                    return name
                }
                let registered = DeviceToken(user: user, kind: kind, value: token, scope: scope ?? "")
                for validator in context.tokenValidators {
                    do {
                        try validator.validate(registered)
                    } catch let rejected as TokenRejected {
                        throw RouteError.badRequest("'\(field).\(rejected.field)' \(rejected.message)", field: "\(field).\(rejected.field)")
                    }
                }
                try await context.registrations.register(
                    registered,
                    environment: registration.environment,
                    replace: replace,
                    keepingAtMost: registration.maxTokensPerUser
                )
                if let zone { try await context.registrations.setSettings([TimeZoneName.deviceSetting: .string(zone)], user: user) }
                for observer in context.registrationObservers { await observer.userRegistered(user) }
                return RouteResponse([
                    "status": "registered", "user_id": .string(user), "token_kind": .string(kind),
                    "token_preview": .string(TokenMask.mask(token)),
                ])
            }
        }
    }
}

/// A register route's keys, as its schema declares them.
struct Registration: Decodable {
    var tokenKind: String
    var tokenField: String
    var tokenFormat: String
    var replace: Bool
    var scopeField: String?
    var environment: String?
    var maxTokensPerUser: Int
    var timeZoneField: String?
}
