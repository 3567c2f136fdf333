import PushPipeCore

extension BuiltinStages {
    static var filters: [StageDescriptor] {
        [
            .filter("settings.enabled", SettingsEnabledFilter.summary, SettingsEnabledFilter.Configuration.self) { configuration, _ in
                SettingsEnabledFilter(configuration: configuration)
            },
            .filter("dedupe.timestamp", TimestampDedupeFilter.summary, TimestampDedupeFilter.Configuration.self) { configuration, _ in
                TimestampDedupeFilter(configuration: configuration)
            },
        ]
    }
}
