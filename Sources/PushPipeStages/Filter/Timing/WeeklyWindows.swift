import Foundation
import PushPipeCore

/// When a pipeline may send, as open spans of a week's minutes in the recipient's zone:
/// windows (`08:00`–`21:00` on weekdays), or the complement of quiet hours (`22:00`–`07:00`).
/// A window whose end is before its start wraps past midnight into the next day (and past
/// Sunday into Monday); one whose end is its start holds no time. Holidays are closed all day.
struct WeeklyWindows: Sendable {
    static let week = 7 * 1440
    static let dayNames = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    /// Sorted, disjoint `[start, end)` minutes of the week, Monday 00:00 being 0.
    let open: [Range<Int>]
    let holidays: Set<ZonedClock.Day>

    struct Window: Decodable, Sendable {
        var days: [String]
        var start: String
        var end: String

        static let schema = Schema([
            SchemaKey("days", .list(.oneOf(WeeklyWindows.dayNames)), default: .array(WeeklyWindows.dayNames.map(JSON.string)), "Days it starts on."),
            .required("start", .string, "`HH:MM` in the recipient's zone."),
            .required("end", .string, "`HH:MM` (`24:00`: midnight); before `start`: the next day's; equal: no time at all."),
        ])
    }

    /// `windows` are open, or `quiet` ones closed: exactly one of them. `keyPath` names them in errors.
    init(windows: [Window]?, quiet: [Window]?, holidays: [String], holidayDays: Set<ZonedClock.Day> = [], keyPath: String = "") throws {
        let (given, isQuiet, key): ([Window], Bool, String)
        switch (windows, quiet) {
        case (let windows?, nil): (given, isQuiet, key) = (windows, false, "windows")
        case (nil, let quiet?): (given, isQuiet, key) = (quiet, true, "quiet")
        default:
            throw ConfigurationValueError(
                keyPath: keyPath + "windows",
                "give either `windows` (when to send) or `quiet` (when not to)",
                expected: "one of the two"
            )
        }
        var spans: [Range<Int>] = []
        for (index, window) in given.enumerated() {
            let path = "\(keyPath)\(key)[\(index)]"
            let start = try WallClockTime(window.start, keyPath: path + ".start").minute
            let end = try WallClockTime(window.end, keyPath: path + ".end", allowingEndOfDay: true).minute
            guard !window.days.isEmpty else { throw ConfigurationValueError(keyPath: path + ".days", "no day given", expected: "at least one day") }
            // A window of no length (`00:00`–`00:00`) holds no time; a whole day is `00:00`–`24:00`.
            guard end != start else { continue }
            for day in Set(window.days.compactMap(Self.dayNames.firstIndex(of:))) {
                let first = day * 1440 + start
                let last = day * 1440 + (end > start ? end : end + 1440)
                // Past Sunday midnight: the rest is Monday's.
                spans.append(first..<min(last, Self.week))
                if last > Self.week { spans.append(0..<(last - Self.week)) }
            }
        }
        let merged = Self.merged(spans)
        open = isQuiet ? Self.complement(merged) : merged
        guard !open.isEmpty else {
            throw ConfigurationValueError(keyPath: keyPath + key, "these \(key) leave no time to send", expected: "some time of the week open")
        }
        self.holidays = holidayDays.union(
            try holidays.enumerated().map { index, text in
                guard let day = ZonedClock.Day(iso: text) else {
                    throw ConfigurationValueError(keyPath: "\(keyPath)holidays[\(index)]", "'\(text)' is not a date", expected: "YYYY-MM-DD")
                }
                return day
            }
        )
    }

    /// The same holidays, and `span`'s quiet hours every day instead of these windows (none when off).
    func replacingWindows(with span: DailySpan) throws -> WeeklyWindows {
        let quiet = span.isOff ? [] : [Window(days: Self.dayNames, start: DailySpan.text(span.start), end: DailySpan.text(span.end))]
        return try WeeklyWindows(windows: nil, quiet: quiet, holidays: [], holidayDays: holidays)
    }

    /// `instant` itself when it is in a window, else the first minute a window opens after it,
    /// in `clock`'s zone; nil only when holidays fill the next 400 days.
    func opening(from instant: Date, _ clock: ZonedClock) -> Date? {
        let (today, minute) = clock.local(instant)
        for offset in 0..<400 {
            let day = ZonedClock.Day(number: today.number + offset)
            guard !holidays.contains(day) else { continue }
            let from = day.weekday * 1440 + (offset == 0 ? minute : 0)
            let dayEnd = day.weekday * 1440 + 1440
            guard let span = open.first(where: { $0.upperBound > from && $0.lowerBound < dayEnd }) else { continue }
            let first = max(span.lowerBound, from)
            if offset == 0, first == from { return instant }
            return clock.instant(day, minute: first - day.weekday * 1440)
        }
        return nil
    }

    private static func merged(_ spans: [Range<Int>]) -> [Range<Int>] {
        var merged: [Range<Int>] = []
        for span in spans.sorted(by: { $0.lowerBound < $1.lowerBound }) where !span.isEmpty {
            if let last = merged.last, span.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, span.upperBound)
            } else {
                merged.append(span)
            }
        }
        return merged
    }

    private static func complement(_ spans: [Range<Int>]) -> [Range<Int>] {
        var open: [Range<Int>] = []
        var from = 0
        for span in spans {
            if span.lowerBound > from { open.append(from..<span.lowerBound) }
            from = span.upperBound
        }
        if from < week { open.append(from..<week) }
        return open
    }
}
