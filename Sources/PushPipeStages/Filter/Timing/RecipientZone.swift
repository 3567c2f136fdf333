import Foundation
import PushPipeCore

/// Which time zone a timing rule reads an event's clock in: the zone the user's device sent at
/// registration (`device_time_zone`), else the user's own (a `settings` route's `time_zone`
/// key), else the stage's `time_zone`, else UTC. A zone a user stored that
/// this machine does not know (tzdata changed) falls back to the stage's, never to "no rule":
/// quiet hours are not silently off for anyone.
struct RecipientZone: Sendable {
    let fallback: TimeZone
    let fallbackName: String
    /// The settings key holding a user's IANA zone; nil: users' settings are not read.
    let setting: String?

    static let schema = Schema([
        SchemaKey("time_zone", .string, default: "UTC", "IANA zone for users who set none (and for events for every user)."),
        SchemaKey(
            "zone_setting",
            .string,
            default: "time_zone",
            "The user setting holding a user's IANA zone (a `settings` route key of type `time_zone`); empty: users' zones are not read."
        ),
    ])

    init(timeZone: String, zoneSetting: String) throws {
        guard let zone = TimeZoneName.zone(timeZone) else {
            throw ConfigurationValueError(
                keyPath: "time_zone",
                "'\(timeZone)' is not a time zone this machine knows",
                expected: TimeZoneName.expected
            )
        }
        fallback = zone
        fallbackName = timeZone
        setting = zoneSetting.isEmpty ? nil : zoneSetting
    }

    /// The zone for `event`'s user, and its name (for reasons people read).
    func zone(for event: Event, context: StageContext) async throws -> (ZonedClock, String) {
        // A broadcast's copy for one zone's users (`ScheduleFilter+Zones`).
        if event.user == nil, let part = event.audience, let zone = TimeZoneName.zone(part.value) { return (ZonedClock(zone: zone), part.value) }
        if let setting, let user = event.user {
            let settings = try await context.settings(user: user)
            for key in [TimeZoneName.deviceSetting, setting] {
                guard let name = settings[key]?.stringValue else { continue }
                if let zone = TimeZoneName.zone(name) { return (ZonedClock(zone: zone), name) }
                context.logger.warning("user \(user)'s time zone '\(name)' is unknown here; the next one is used")
            }
        }
        return (ZonedClock(zone: fallback), fallbackName)
    }
}
