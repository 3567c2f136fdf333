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
            .filter("timing.schedule", ScheduleFilter.summary, ScheduleFilter.Configuration.self) { configuration, _ in
                try ScheduleFilter(configuration: configuration)
            },
            .filter("timing.window", SendWindowFilter.summary, SendWindowFilter.Configuration.self) { configuration, _ in
                try SendWindowFilter(configuration: configuration)
            },
            .filter("timing.throttle", ThrottleFilter.summary, ThrottleFilter.Configuration.self) { configuration, _ in
                ThrottleFilter(configuration: configuration)
            },
            .filter("timing.digest", DigestFilter.summary, DigestFilter.Configuration.self) { configuration, _ in
                try DigestFilter(configuration: configuration)
            },
            .filter("timing.cap", FrequencyCapFilter.summary, FrequencyCapFilter.Configuration.self) { configuration, _ in
                try FrequencyCapFilter(configuration: configuration)
            },
        ]
    }
}
