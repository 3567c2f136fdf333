extension RouteAction {
    /// Looks a token up in one of `formats` that name no scope (`hex` unless it says).
    public static func usersByToken(formats: TokenFormats) -> RouteAction {
        let plain = formats.all.filter { !$0.carriesScope }
        let schema = Schema([
            SchemaKey("token_param", .string, default: "device_token", "Path parameter holding the token; also the response key."),
            SchemaKey("token_kind", .string, "Only tokens of this kind; all kinds when omitted."),
            TokenFormats.schemaKey(plain, default: "hex", "How the token is written; a token not in this format is a 400."),
        ])
        /// The configuration as its schema says, defaults filled in, and its format.
        @Sendable func lookup(_ json: JSON) throws -> (TokenLookup, any TokenFormat) {
            let lookup = try schema.decode(TokenLookup.self, from: json)
            return (lookup, try formats.configured(lookup.tokenFormat))
        }
        return RouteAction(
            name: "users-by-token",
            summary: "Lists the users a token is registered for (multi-account devices).",
            defaultMethod: "GET",
            schema: schema,
            contract: { configuration in
                let (lookup, format) = try lookup(configuration)
                let parameter = lookup.tokenParam
                return RouteContract(
                    summary: "The users a token is registered for.",
                    path: [parameter: format.schema],
                    responses: [
                        200: RouteContract.object(
                            [
                                parameter: RouteContract.string,
                                "user_ids": ["type": "array", "items": RouteContract.string],
                            ],
                            required: [parameter, "user_ids"]
                        )
                    ]
                )
            }
        ) { configuration in
            let (lookup, format) = try lookup(configuration)
            let (parameter, kind) = (lookup.tokenParam, lookup.tokenKind)
            return { request, context in
                guard let raw = request.parameters[parameter] else { throw RouteError.badRequest("missing token", field: parameter) }
                let token = try format.normalize(.string(raw), field: parameter)
                let users = try await context.registrations.users(token: token, kind: kind)
                // The caller sent this token: echoing it back reveals nothing new.
                return RouteResponse([parameter: .string(token), "user_ids": .array(users.map(JSON.string))])
            }
        }
    }
}

/// A users-by-token route's keys, as its schema declares them.
struct TokenLookup: Decodable {
    var tokenParam: String
    var tokenKind: String?
    var tokenFormat: String
}
