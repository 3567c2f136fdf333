extension RouteAction {
    public static let diagnostics = RouteAction(
        name: "diagnostics",
        summary: "Shows what pushpipe knows of a user: tokens (masked), settings, last delivery, and what its stages report.",
        defaultMethod: "GET",
        schema: DiagnosticsKind.schema,
        contract: { configuration in
            RouteContract(
                summary: "What pushpipe knows of a user.",
                path: UserSelector(configuration).pathParameter(),
                responses: [
                    200: RouteContract.object(
                        [
                            "user_id": RouteContract.string, "device_token_registered": ["type": "boolean"],
                            "device_token_preview": RouteContract.nullableString, "device_count": ["type": "integer"],
                            "last_notification_time": ["type": "integer"], "settings": RouteContract.object,
                        ],
                        required: ["user_id", "device_token_registered", "device_count", "settings"]
                    )
                ]
            )
        }
    ) { configuration in
        let users = UserSelector(configuration)
        try users.check(authenticates: RouteAuthConfiguration.authenticatesUsers(configuration["auth"]))
        let kind = try DiagnosticsKind.schema.decode(DiagnosticsKind.self, from: configuration).tokenKind
        return { request, context in
            let user = try users.user(in: request)
            guard try await context.registrations.isRegistered(user: user) else {
                throw RouteError.notFound("unknown user '\(user)'", field: users.parameter ?? users.field)
            }
            let tokens = try await context.registrations.tokens(user: user, kind: kind)
            let last = try await context.deliveries.lastDelivery(user: user)
            let settings = try await context.registrations.settings(user: user)
            var view: [String: JSON] = [:]
            for provider in context.diagnosticsProviders {
                view.merge(await provider.diagnostics(for: user)) { _, new in new }
            }
            view.merge([
                "user_id": .string(user),
                "device_token_registered": .bool(!tokens.isEmpty),
                // 16 hex characters and `...`: enough to tell devices apart, never the token.
                "device_token_preview": tokens.first.map { .string(String($0.value.prefix(16)) + "...") } ?? .null,
                "device_count": .int(Int64(tokens.count)),
                "last_notification_time": .int(Int64(((last?.delivery.at ?? 0) * 1000).rounded())),
                "settings": .object(settings),
            ]) { _, own in own }
            return RouteResponse(.object(view))
        }
    }
}

/// The token kind a diagnostics route reports, as its schema declares it.
struct DiagnosticsKind: StageConfiguration {
    var tokenKind: String

    static let schema = Schema(
        RouteAction.userKeys + [
            SchemaKey("token_kind", .string, default: "device", "Token kind reported as `device_token_registered` / `device_token_preview`.")
        ]
    )
}
