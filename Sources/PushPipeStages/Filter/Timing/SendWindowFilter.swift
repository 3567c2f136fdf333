import Foundation
import PushPipeCore

/// Quiet hours: outside the pipeline's send windows, in the recipient's zone, an event waits
/// in the store until the next window opens (deferred, not dropped). An event whose
/// `bypass_field` holds one of `bypass_values` (a security alert) goes at any time.
struct SendWindowFilter: Filter {
    static let summary = "Defers events outside the send windows (or inside quiet hours), in each user's time zone, to the next opening."

    struct Configuration: StageConfiguration {
        var windows: [WeeklyWindows.Window]?
        var quiet: [WeeklyWindows.Window]?
        var holidays: [String]
        var bypassField: String?
        var bypassValues: [JSON]
        var quietSetting: String
        var timeZone: String
        var zoneSetting: String

        static let schema =
            Schema(
                [
                    SchemaKey("windows", .list(.object(WeeklyWindows.Window.schema)), "When to send (or give `quiet`)."),
                    SchemaKey("quiet", .list(.object(WeeklyWindows.Window.schema)), "When not to send (or give `windows`)."),
                    SchemaKey("holidays", .list(.string), default: [], "Days (`YYYY-MM-DD`, in the recipient's zone) with no sending at all."),
                    SchemaKey(
                        "quiet_setting",
                        .string,
                        default: "quiet_hours",
                        "The user setting holding a user's own quiet hours (a `settings` route key of type `quiet_hours`: `22:00-07:00` every day, "
                            + "or `off`), which replace the pipeline's windows for that user; empty: users' own are not read."
                    ),
                ] + Bypass.keys("is sent at any time")
            ) + RecipientZone.schema
    }

    /// How it knows its own holds (`EventHold.holder`).
    static let holder = "timing.window"

    let windows: WeeklyWindows
    let zones: RecipientZone
    let configuration: Configuration
    var readsUserSettings: Bool { zones.setting != nil || !configuration.quietSetting.isEmpty }

    init(configuration: Configuration) throws {
        windows = try WeeklyWindows(windows: configuration.windows, quiet: configuration.quiet, holidays: configuration.holidays)
        zones = try RecipientZone(timeZone: configuration.timeZone, zoneSetting: configuration.zoneSetting)
        self.configuration = configuration
    }

    /// The user's own quiet hours (`quiet_setting`) when they set some, else the pipeline's
    /// windows; the pipeline's holidays either way.
    func windows(for event: Event, context: StageContext) async throws -> WeeklyWindows {
        guard !configuration.quietSetting.isEmpty, let user = event.user,
            let text = try await context.setting(user: user, key: configuration.quietSetting)?.stringValue,
            let span = DailySpan(text)
        else { return windows }
        return (try? windows.replacingWindows(with: span)) ?? windows
    }

    /// How far ahead of the store's clock a daemon's may run and still judge a returning event
    /// at the opening it waited for.
    static let clockTolerance = 120.0

    func apply(to event: Event, context: StageContext) async throws -> FilterResult {
        if Bypass.applies(to: event, field: configuration.bypassField, values: configuration.bypassValues) { return .pass(event) }
        let (clock, zone) = try await zones.zone(for: event, context: context)
        let windows = try await self.windows(for: event, context: context)
        // Back from its wait: judged at the opening it waited for, so a daemon whose clock is
        // behind the store's, or up to `clockTolerance` ahead, does not make it wait again (two
        // daemons a minute apart would pass it back and forth); one back much later (the
        // daemons were down into the next quiet hours) is judged now.
        let waited = event.hold(by: Self.holder)?.until
        let now = waited.map { context.clock.now <= $0 + Self.clockTolerance ? $0 : context.clock.now } ?? context.clock.now
        let instant = Date(timeIntervalSince1970: now)
        guard let opening = windows.opening(from: instant, clock) else {
            return .drop(reason: "no send window opens in the next 400 days (\(zone))", code: "no_window")
        }
        guard opening > instant else { return .pass(event) }
        let local = clock.local(opening).minute
        let reason = "outside the send windows in \(zone); the next opens at \(DailySpan.text(local)) there"
        return .hold(EventHold(.deferred, until: opening, reason: reason, code: "quiet_hours", holder: Self.holder))
    }
}
