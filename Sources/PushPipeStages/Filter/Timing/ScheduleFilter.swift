import Foundation
import PushPipeCore

/// Sends an event at an instant rather than at once: one the event names (`at_field`, less
/// `before`), a delay after it arrived or after that instant, the next time of day in the
/// recipient's zone (`local_time`), spread by `jitter`. Until then it waits in the store.
/// An instant already past is sent at once, skipped (`late: skip`), or moved to the next
/// `local_time` (`late: next`); one whose wait ran past `expires_after` is not sent. With
/// `repeat` it goes again every day or week (`ScheduleFilter+Recurring`).
struct ScheduleFilter: Filter {
    static let summary = "Holds events until an instant: a time in the event, a delay, or a time of day in each user's zone."

    struct Configuration: StageConfiguration {
        var atField: String?
        @Seconds var before: Duration
        @Seconds var delay: Duration
        var delayField: String?
        var localTime: String?
        var late: String
        @Seconds var lateAfter: Duration
        @Seconds var expiresAfter: Duration
        @Seconds var jitter: Duration
        var replaceKeyField: String?
        var `repeat`: String?
        var repeatDays: [String]?
        var untilField: String?
        var timeZone: String
        var zoneSetting: String

        static let schema =
            Schema([
                SchemaKey("at_field", .string, "A body field holding the instant (ISO 8601 with its offset, or UNIX seconds); absent: now."),
                SchemaKey("before", .duration, default: 0, "Sent this long before `at_field`'s instant (24 h before an appointment)."),
                SchemaKey("delay", .duration, default: 0, "Sent this long after the instant (or after it arrived)."),
                SchemaKey("delay_field", .string, "A body field holding a further delay (seconds, or `10m`, `2h`)."),
                SchemaKey("local_time", .string, "`HH:MM`: sent at the first such time of day in the user's zone, at or after the instant."),
                SchemaKey(
                    "late",
                    .oneOf(["send", "skip", "next"]),
                    default: "send",
                    "An instant already past when the event arrives (or a repeating send's, when it comes back): send at once, drop it, "
                        + "or wait for the next `local_time`."
                ),
                SchemaKey("late_after", .duration, default: 60, "How far past an instant may be and still count as on time."),
                SchemaKey(
                    "expires_after",
                    .duration,
                    default: 0,
                    "Not sent once this long past its instant (a restart, a long outage); 0: never expires."
                ),
                SchemaKey("jitter", .duration, default: 0, "Spreads sends over this long after the instant (the same spread for the same event)."),
                SchemaKey(
                    "replace_key_field",
                    .string,
                    "A body field naming the send (up to 256 characters): a later event of the same caller with the same key replaces it while it "
                        + "waits, and a `cancel` route withdraws it."
                ),
            ]) + Recurrence.schema + RecipientZone.schema
    }

    /// How it knows its own holds (`EventHold.holder`): one schedule per pipeline.
    static let holder = "timing.schedule"

    let configuration: Configuration
    let localTime: WallClockTime?
    let recurrence: Recurrence?
    let zones: RecipientZone
    /// Only a local time is read in the user's zone; a delay or a time from the event is not.
    var readsUserSettings: Bool { localTime != nil && zones.setting != nil }

    init(configuration: Configuration) throws {
        self.configuration = configuration
        localTime = try configuration.localTime.map { try WallClockTime($0, keyPath: "local_time") }
        zones = try RecipientZone(timeZone: configuration.timeZone, zoneSetting: configuration.zoneSetting)
        recurrence = try Recurrence(
            every: configuration.repeat,
            days: configuration.repeatDays,
            untilField: configuration.untilField,
            hasLocalTime: localTime != nil
        )
        guard configuration.late != "next" || localTime != nil else {
            throw ConfigurationValueError(
                keyPath: "late",
                "`next` is the next `local_time`, and none is given",
                expected: "`send`, `skip`, or a `local_time`"
            )
        }
        guard configuration.atField != nil || configuration.delay > .zero || configuration.delayField != nil || localTime != nil else {
            throw ConfigurationValueError(
                keyPath: "at_field",
                "nothing to schedule by",
                expected: "`at_field`, `delay`, `delay_field` or `local_time`"
            )
        }
    }

    func apply(to event: Event, context: StageContext) async throws -> FilterResult {
        let now = context.clock.now
        // A dead letter's replay: it failed once its time had come, so it goes now (a replayed
        // occurrence or zone's copy does not start a series or a split of its own).
        if event.replayOf != nil { return .pass(event) }
        // A repeating send's occurrence back from a later filter's wait: it is not due again.
        if let occurrence = event.hold(by: Self.occurrenceHolder) {
            return expired(event, instant: occurrence.until, now: now) ?? .pass(event)
        }
        // Back from its wait: sent, unless it waited too long; a repeating one waits again.
        if let waited = event.hold(by: Self.holder) {
            if let recurrence { return try await recur(event, waited: waited, by: recurrence, now: now, context: context) }
            return expired(event, instant: waited.until, now: now) ?? .pass(event)
        }
        var replaceKey: String?
        if let field = configuration.replaceKeyField, let value = event.body.value(at: field), value != .null {
            guard let key = value.textValue, !key.isEmpty, key.utf8.count <= 256 else {
                return .drop(reason: "'\(field)' is not a key (a text of 1 to 256 bytes)", code: "invalid_replace_key")
            }
            replaceKey = key
        }
        if recurrence != nil, let field = configuration.untilField, Self.end(of: event, field: field) == nil {
            return .drop(reason: "'\(field)' is not an instant (ISO 8601 with an offset, or UNIX seconds)", code: "invalid_time")
        }
        // An event for every user at a time of day: one send per zone, each for its users.
        if event.user == nil, event.audience == nil, localTime != nil, zones.setting != nil {
            return try await split(event, replaceKey: replaceKey, now: now, context: context)
        }
        var instant: Double
        let zone: String?
        switch try await self.instant(of: event, now: now, context: context) {
        case .invalid(let reason): return .drop(reason: reason, code: "invalid_time")
        case .at(let at, let named): (instant, zone) = (at, named)
        }
        // Past when it arrived: the next time of day it names.
        if configuration.late == "next", instant <= now, event.holds.isEmpty, now - instant > configuration.lateAfter.inSeconds {
            guard case .at(let next, _) = try await self.instant(of: event, now: now, from: now + 1, context: context) else {
                return .drop(reason: "no next occurrence", code: "late")
            }
            instant = next
        }
        if recurrence != nil, let field = configuration.untilField, let end = Self.end(of: event, field: field), instant > end {
            return .drop(reason: "its first occurrence would be after '\(field)'", code: "late")
        }
        // A repeating send waits even when due already: its first occurrence comes back at once,
        // and one missed is skipped there (`late`) while the series goes on.
        if instant > now || recurrence != nil {
            let local = zone.map { " (\(localTime.map { DailySpan.text($0.minute) } ?? "") in \($0))" } ?? ""
            let reason = "scheduled for \(EventRecord.timestamp(instant))\(local)"
            return .hold(
                EventHold(
                    .scheduled,
                    until: Date(timeIntervalSince1970: instant),
                    reason: reason,
                    code: "send_at",
                    holder: Self.holder,
                    replaceKey: replaceKey
                )
            )
        }
        // An event that waited for another rule is not late for it.
        if configuration.late == "skip", event.holds.isEmpty, now - instant > configuration.lateAfter.inSeconds {
            return .drop(reason: "its instant \(EventRecord.timestamp(instant)) had passed when it arrived", code: "late")
        }
        return expired(event, instant: instant, now: now) ?? .pass(event)
    }

    private func expired(_ event: Event, instant: Double, now: Double) -> FilterResult? {
        guard configuration.expiresAfter > .zero, now > instant + configuration.expiresAfter.inSeconds else { return nil }
        return .drop(
            reason: "expired: due at \(EventRecord.timestamp(instant)), not sent \(configuration.expiresAfter.inSeconds) s after",
            code: "expired"
        )
    }

    enum Instant {
        case at(Double, zone: String?)
        case invalid(String)
    }

    /// The instant `event` is due at, by the rules in their order: the named instant (or now),
    /// less `before`, plus the delays, moved to the next `local_time`, plus the jitter.
    /// With `from`, the local time and jitter only, from that instant (`late: next`).
    func instant(of event: Event, now: Double, from: Double? = nil, context: StageContext) async throws -> Instant {
        var instant = from ?? now
        if from == nil, let field = configuration.atField, let value = event.body.value(at: field), value != .null {
            guard let at = Self.seconds(instant: value) else {
                return .invalid("'\(field)' is not an instant (ISO 8601 with an offset, or UNIX seconds)")
            }
            instant = at - configuration.before.inSeconds
        }
        if from == nil { instant += configuration.delay.inSeconds }
        if from == nil, let field = configuration.delayField, let value = event.body.value(at: field), value != .null {
            let seconds = value.doubleValue ?? value.stringValue.flatMap(SchemaValidator.parseDuration)
            guard let seconds, seconds.isFinite, (0...SchemaValidator.maximumDuration).contains(seconds) else {
                return .invalid("'\(field)' is not a delay (seconds, or a duration such as 10m, up to a year)")
            }
            instant += seconds
        }
        var zone: String?
        if let localTime {
            let (clock, name) = try await zones.zone(for: event, context: context)
            zone = name
            let (today, minute) = clock.local(Date(timeIntervalSince1970: instant))
            // At or after the instant: today's, else the next day's (which exists: a gap moves
            // it), on a day a weekly send goes on.
            var day = minute <= localTime.minute ? today : ZonedClock.Day(number: today.number + 1)
            while clock.instant(day, minute: localTime.minute).timeIntervalSince1970 < instant.rounded(.down) || recurrence?.allows(day) == false {
                day = ZonedClock.Day(number: day.number + 1)
            }
            instant = clock.instant(day, minute: localTime.minute).timeIntervalSince1970
        }
        instant += jitter(event)
        // Nothing waits in the store for longer than a year.
        guard instant - now <= SchemaValidator.maximumDuration else { return .invalid("its instant is more than a year ahead") }
        return .at(instant, zone: zone)
    }

    /// How far past its instant `event` goes: the same for the same event on every daemon.
    func jitter(_ event: Event) -> Double {
        configuration.jitter > .zero ? configuration.jitter.inSeconds * Self.spread(event.id + "\u{0}" + (event.user ?? "")) : 0
    }

    /// ISO 8601 with an offset (fractions allowed), or UNIX seconds.
    static func seconds(instant value: JSON) -> Double? {
        if let number = value.doubleValue { return number.isFinite && abs(number) < 1e11 ? number : nil }
        // Foundation reads `T25:00` as the next day's 01:00: the fields are checked first.
        guard let text = value.stringValue, text.utf8.count >= 20, text.utf8.count <= 40, ZonedClock.Day(iso: String(text.prefix(10))) != nil
        else { return nil }
        let time = Array(text.utf8.dropFirst(10).prefix(9))
        func number(_ at: Int) -> Int? { Int(String(decoding: time[at..<(at + 2)], as: UTF8.self)) }
        guard time[0] == UInt8(ascii: "T") || time[0] == UInt8(ascii: "t"), time[3] == UInt8(ascii: ":"), time[6] == UInt8(ascii: ":"),
            let hour = number(1), let minute = number(4), let second = number(7), hour < 24, minute < 60, second < 61
        else { return nil }
        let plain = Date.ISO8601FormatStyle()
        let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        return ((try? plain.parse(text)) ?? (try? fractional.parse(text)))?.timeIntervalSince1970
    }

    /// A fraction in [0, 1) that depends only on `text` (FNV-1a): the same event spreads the same way on every daemon.
    static func spread(_ text: String) -> Double {
        Double(StoredKey.hash(text) >> 11) / Double(UInt64(1) << 53)
    }
}
