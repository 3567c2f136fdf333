import Foundation
import PushPipeCore

/// A repeating send (`repeat`): the event waits in the store for its next occurrence, and each
/// time one falls due it goes on as `<id>@<local date>` while the event waits again
/// (`FilterResult.recur`). The last occurrence before `until_field`'s instant is the event
/// itself, so its status ends with the series.
extension ScheduleFilter {
    /// How an occurrence knows it is one (its copy of the schedule's hold is renamed to this):
    /// back from a later filter's wait, it is sent, not repeated.
    static let occurrenceHolder = "timing.schedule/occurrence"

    /// Most occurrences looked past at once: a daemon down for longer than this many days
    /// starts again from now.
    static let longestCatchUp = 800

    func recur(_ event: Event, waited: PassedHold, by recurrence: Recurrence, now: Double, context: StageContext) async throws -> FilterResult {
        guard let localTime else { return .pass(event) }
        let (clock, zone) = try await zones.zone(for: event, context: context)
        let jitter = self.jitter(event)
        let day = clock.local(Date(timeIntervalSince1970: waited.until - jitter)).day
        // The next occurrence after now: a daemon that was down sends what it missed once.
        var nextDay = recurrence.day(after: day)
        var next = clock.instant(nextDay, minute: localTime.minute).timeIntervalSince1970 + jitter
        for _ in 0..<Self.longestCatchUp where next <= now {
            nextDay = recurrence.day(after: nextDay)
            next = clock.instant(nextDay, minute: localTime.minute).timeIntervalSince1970 + jitter
        }
        if next <= now { next = now + 60 }
        // Checked when it arrived; one that is not an instant now (a body changed since) ends it.
        let end = configuration.untilField.map { Self.end(of: event, field: $0) ?? -.infinity } ?? .infinity
        // Late or expired: this one is not sent, the series goes on.
        let missed: String? =
            if configuration.expiresAfter > .zero, now > waited.until + configuration.expiresAfter.inSeconds {
                "expired"
            } else if configuration.late != "send", now - waited.until > configuration.lateAfter.inSeconds { "late" } else { nil }
        var occurrence = event
        occurrence.holds = event.holds.filter { $0.stage != Self.holder } + [PassedHold(stage: Self.occurrenceHolder, until: waited.until)]
        guard next <= end, next - now <= SchemaValidator.maximumDuration else {
            // The last one goes under the event's own id.
            guard let missed else { return .pass(occurrence) }
            return .drop(reason: "its last occurrence, due \(EventRecord.timestamp(waited.until)), was missed", code: missed)
        }
        let time = DailySpan.text(localTime.minute)
        let replaceKey = configuration.replaceKeyField.flatMap { event.body.value(at: $0)?.textValue }
        let hold = EventHold(
            .scheduled,
            until: Date(timeIntervalSince1970: next),
            reason: "repeats \(recurrence.every.rawValue) at \(time) in \(zone): next \(EventRecord.timestamp(next))",
            code: "send_at",
            holder: Self.holder,
            replaceKey: replaceKey
        )
        occurrence.id = event.id + "@" + day.iso
        return .recur(occurrence: missed == nil ? occurrence : nil, next: hold)
    }

    /// The instant `field` of `event` names, +infinity when it names none; nil when it is not one.
    static func end(of event: Event, field: String) -> Double? {
        guard let value = event.body.value(at: field), value != .null else { return .infinity }
        return seconds(instant: value)
    }
}
