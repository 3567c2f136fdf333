extension RouteAction {
    public static let settings = RouteAction(
        name: "settings",
        summary: "Changes a user's settings (e.g. `enabled`), which filters read.",
        defaultMethod: "PATCH",
        schema: Schema(
            userKeys + [
                .required(
                    "keys",
                    .map(.oneOf(["boolean", "string", "integer", "time_zone", "quiet_hours"])),
                    "Settings a client may change, with their JSON type (`time_zone`: a string naming an IANA zone, which timing filters read)."
                )
            ]
        ),
        contract: { configuration in
            var properties = UserSelector(configuration).bodyProperty()
            for (key, type) in configuration["keys"]?.objectValue ?? [:] {
                properties[key] =
                    switch type {
                    case "time_zone": ["type": "string", "description": "An IANA time zone, such as Europe/Berlin."]
                    case "quiet_hours": ["type": "string", "description": "The user's quiet hours, such as 22:00-07:00, or off."]
                    default: ["type": type]
                    }
            }
            let userKeys = Array(UserSelector(configuration).bodyProperty().keys)
            let body = RouteContract.object(properties, required: userKeys, minProperties: userKeys.count + 1)
            return RouteContract(
                summary: "Changes a user's settings; at least one of them.",
                body: body,
                path: UserSelector(configuration).pathParameter(),
                responses: [
                    200: RouteContract.object(
                        ["user_id": RouteContract.string, "settings": RouteContract.object],
                        required: ["user_id", "settings"]
                    )
                ]
            )
        }
    ) { configuration in
        let users = UserSelector(configuration)
        try users.check(authenticates: RouteAuthConfiguration.authenticatesUsers(configuration["auth"]))
        let keys = (configuration["keys"]?.objectValue ?? [:]).compactMapValues(\.stringValue)
        return { request, context in
            let user = try users.user(in: request)
            var values: [String: JSON] = [:]
            for (key, value) in request.body?.objectValue ?? [:] where key != users.field {
                guard let type = keys[key] else {
                    throw RouteError.badRequest("unknown setting '\(key)'; known: \(keys.keys.sorted().joined(separator: ", "))", field: key)
                }
                let matches =
                    switch (type, value) {
                    case ("boolean", .bool), ("string", .string), ("integer", .int): true
                    case ("time_zone", .string(let name)): TimeZoneName.zone(name) != nil
                    case ("quiet_hours", .string(let text)): DailySpan(text) != nil
                    default: false
                    }
                guard matches else {
                    if value.stringValue != nil, let expected = ["time_zone": TimeZoneName.expected, "quiet_hours": DailySpan.expected][type] {
                        throw RouteError.unprocessable("'\(key)' must be \(expected)", field: key)
                    }
                    throw RouteError.unprocessable("'\(key)' must be a \(type), found \(value.typeName)", field: key)
                }
                values[key] = value
            }
            guard !values.isEmpty else {
                throw RouteError.badRequest("no setting given; known: \(keys.keys.sorted().joined(separator: ", "))", field: keys.keys.sorted().first)
            }
            try await context.registrations.setSettings(values, user: user)
            let all = try await context.registrations.settings(user: user)
            return RouteResponse(["user_id": .string(user), "settings": .object(all)])
        }
    }
}
