extension RouteAction {
    public static let history = RouteAction(
        name: "history",
        summary: "Lists the notifications delivered to a user, newest first (`?limit=&before=`).",
        defaultMethod: "GET",
        schema: HistoryPages.schema,
        contract: { configuration in
            let pages = try HistoryPages.schema.decode(HistoryPages.self, from: configuration)
            return RouteContract(
                summary: "The notifications delivered to a user, newest first.",
                query: [
                    "limit": ["type": "integer", "minimum": 1, "maximum": .int(Int64(pages.maxLimit))],
                    "before": ["type": "integer", "minimum": 1],
                ],
                path: UserSelector(configuration).pathParameter(),
                responses: [
                    200: RouteContract.object(
                        [
                            "history": ["type": "array", "items": RouteContract.object],
                            "next_before": ["type": ["integer", "null"]],
                        ],
                        required: ["history", "next_before"]
                    )
                ]
            )
        }
    ) { configuration in
        let users = UserSelector(configuration)
        try users.check(authenticates: RouteAuthConfiguration.authenticatesUsers(configuration["auth"]))
        let pages = try HistoryPages.schema.decode(HistoryPages.self, from: configuration)
        let (defaultLimit, maxLimit) = (pages.defaultLimit, pages.maxLimit)
        guard defaultLimit <= maxLimit else {
            throw ConfigurationValueError(keyPath: "default_limit", "\(defaultLimit) is out of range", expected: "1 to max_limit (\(maxLimit))")
        }
        return { request, context in
            let user = try users.user(in: request)
            var limit = defaultLimit
            if let text = request.query["limit"] {
                guard let value = Int(text), (1...maxLimit).contains(value) else {
                    throw RouteError.badRequest("limit must be a whole number from 1 to \(maxLimit)", field: "limit")
                }
                limit = value
            }
            var before: Int64?
            if let text = request.query["before"] {
                guard let value = Int64(text), value > 0 else { throw RouteError.badRequest("before must be a positive cursor", field: "before") }
                before = value
            }
            let entries = try await context.deliveries.history(user: user, limit: limit + 1, before: before)
            let page = entries.prefix(limit)
            let next: JSON = entries.count > limit ? (page.last?.id).map(JSON.int) ?? .null : .null
            return RouteResponse(["history": .array(page.map(\.record)), "next_before": next])
        }
    }
}

/// A history route's pages, as its schema declares them.
struct HistoryPages: StageConfiguration {
    var defaultLimit: Int
    var maxLimit: Int

    static let schema = Schema(
        RouteAction.userKeys + [
            SchemaKey("default_limit", .integer, default: 50, in: 1...10_000, "Entries per page without `?limit=`; at most `max_limit`."),
            SchemaKey("max_limit", .integer, default: 500, in: 1...10_000, "Largest `?limit=` accepted."),
        ]
    )
}
