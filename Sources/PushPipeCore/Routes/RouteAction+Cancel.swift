extension RouteAction {
    /// Withdraws the sends a caller scheduled under a replace key (`timing.schedule`'s
    /// `replace_key_field`) that still wait: with the route's authentication, only the caller's
    /// own, and none already on its way. Their records say `dropped`, code `cancelled`.
    public static let cancel = RouteAction(
        name: "cancel",
        summary: "Cancels the caller's pending sends scheduled under a replace key (`DELETE <path>/:key`).",
        defaultMethod: "DELETE",
        schema: Schema([
            SchemaKey("key_param", .string, default: "key", "The path parameter holding the replace key (`:key` in `path`).")
        ]),
        contract: { configuration in
            let parameter = configuration["key_param"]?.stringValue ?? "key"
            return RouteContract(
                summary: "Cancels the caller's pending sends under a replace key.",
                path: [parameter: ["type": "string", "minLength": 1, "maxLength": 256]],
                responses: [
                    200: RouteContract.object(
                        ["cancelled": ["type": "integer"], "events": ["type": "array", "items": RouteContract.string]],
                        required: ["cancelled", "events"]
                    )
                ],
                errors: [404: "Nothing of this caller waits under the key."]
            )
        }
    ) { configuration in
        let parameter = configuration["key_param"]?.stringValue ?? "key"
        // Sends are withdrawn per caller: without authentication every caller would be nobody.
        guard let auth = configuration["auth"]?["type"]?.stringValue, auth != "none" else {
            throw ConfigurationValueError(keyPath: "auth", "a cancel route needs authentication", expected: "a `token`, `jwt` or `identity` auth")
        }
        guard configuration["path"]?.stringValue?.split(separator: "/").contains(Substring(":" + parameter)) == true else {
            throw ConfigurationValueError(
                keyPath: "path",
                "the path has no ':\(parameter)' segment",
                expected: "a path such as /events/scheduled/:\(parameter)"
            )
        }
        return { request, context in
            guard let key = request.parameters[parameter], !key.isEmpty, key.utf8.count <= 256 else {
                throw RouteError.badRequest("missing or invalid '\(parameter)'", field: parameter)
            }
            // A dry run withdraws nothing a live daemon keeps.
            let withdrawn =
                context.mode == .live ? try await context.queuedEvents.work.withdrawHeld(replaceKey: key, caller: request.principal) : []
            guard !withdrawn.isEmpty else { throw RouteError.notFound("no pending send of yours under '\(key)'", field: parameter) }
            let now = SystemClock().now
            try await context.deliveries.recordOutcome(
                deliveries: [],
                state: [],
                events: withdrawn.filter { $0.caller != nil }.map {
                    $0.withdrawnRecord(code: "cancelled", reason: "cancelled by its caller", at: now)
                }
            )
            return RouteResponse(["cancelled": .int(Int64(withdrawn.count)), "events": .array(withdrawn.map { .string($0.eventID) })])
        }
    }
}
