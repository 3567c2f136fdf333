import PushPipeCore

/// Drops events for users who switched notifications off through a `settings` route.
/// Nothing is queued for later: a disabled user simply gets nothing.
struct SettingsEnabledFilter: Filter {
    static let summary = "Drops events for users whose boolean setting (default `enabled`) is false."

    struct Configuration: StageConfiguration {
        var key: String
        var `default`: Bool

        static let schema = Schema([
            SchemaKey("key", .string, default: "enabled", "The boolean setting to read."),
            SchemaKey("default", .boolean, default: true, "Value for users who never changed it."),
        ])
    }

    let configuration: Configuration
    var readsUserSettings: Bool { true }

    func apply(to event: Event, context: StageContext) async throws -> FilterResult {
        guard let user = event.user else { return .pass(event) }
        let value = try await context.setting(user: user, key: configuration.key)
        return (value?.boolValue ?? configuration.default)
            ? .pass(event) : .drop(reason: "user \(user) has '\(configuration.key)' off", code: "setting_off")
    }
}
