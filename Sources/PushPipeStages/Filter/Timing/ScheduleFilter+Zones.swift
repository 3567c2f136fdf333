import Foundation
import PushPipeCore

/// "09:00 local" for every user: the event goes out as one copy per time zone its users have
/// (`<id>@<zone>`), each for that zone's users (`Event.audience`) and due at that zone's 09:00,
/// plus one for the users with no zone (or one this machine does not know), at the stage's.
/// Nothing is sent to everyone at the first zone's hour.
extension ScheduleFilter {
    /// Most zones a broadcast is split into; users of others get the stage's zone's copy.
    static let mostZones = 1000

    func split(_ event: Event, replaceKey: String?, now: Double, context: StageContext) async throws -> FilterResult {
        guard let setting = zones.setting else { return .pass(event) }
        let keys = [TimeZoneName.deviceSetting, setting]
        let known = try await context.registrations.settingTexts(keys: keys, limit: Self.mostZones).filter { TimeZoneName.zone($0) != nil }
        var copies: [(copy: Event, hold: EventHold)] = []
        for zone in known.union([zones.fallbackName]).sorted() {
            var copy = event
            copy.id = event.id + "@" + zone
            copy.audience = Audience(keys: keys, recognized: known, value: zone, orUnset: zone == zones.fallbackName, origin: event.id)
            guard case .at(var instant, _) = try await self.instant(of: copy, now: now, context: context) else {
                return .drop(reason: "its instant is not one, or more than a year ahead", code: "invalid_time")
            }
            // Past already in this zone (an `at_field` in the past): as `late` says.
            if instant <= now - configuration.lateAfter.inSeconds {
                switch configuration.late {
                case "skip": continue
                case "next":
                    guard case .at(let next, _) = try await self.instant(of: copy, now: now, from: now + 1, context: context) else { continue }
                    instant = next
                default: break
                }
            }
            let time = localTime.map { DailySpan.text($0.minute) } ?? ""
            let hold = EventHold(
                .scheduled,
                until: Date(timeIntervalSince1970: max(instant, now)),
                reason: "scheduled for \(EventRecord.timestamp(instant)) (\(time) in \(zone)) for the users in \(zone)"
                    + (copy.audience?.orUnset == true ? " and those with no zone" : ""),
                code: "send_at",
                holder: Self.holder,
                replaceKey: replaceKey
            )
            copies.append((copy, hold))
        }
        guard !copies.isEmpty else { return .drop(reason: "its instant had passed in every zone when it arrived", code: "late") }
        return .split(copies)
    }
}
