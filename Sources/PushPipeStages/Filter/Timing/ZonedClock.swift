import Foundation

/// Wall-clock arithmetic in one IANA zone, on local seconds (an instant plus its offset, read
/// as if it were UTC) so that days and minutes are plain integers. Foundation's calendar moves
/// a time that does not exist by the offset's change, which on a 30-minute shift (Lord Howe)
/// lands before the gap; here a time in a gap is the gap's end (the next valid minute) and a
/// repeated time is its first occurrence, in every zone.
struct ZonedClock: Sendable {
    let zone: TimeZone

    /// A day of the zone's calendar: days since 1970-01-01.
    struct Day: Sendable, Hashable, Comparable {
        var number: Int

        /// Monday 0 … Sunday 6 (1970-01-01 was a Thursday).
        var weekday: Int { ((number % 7) + 7 + 3) % 7 }

        static func < (lhs: Day, rhs: Day) -> Bool { lhs.number < rhs.number }

        /// `YYYY-MM-DD`, or nil for anything else (a calendar date that does not exist too).
        init?(iso text: String) {
            let parts = text.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
                let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
                (1...12).contains(month), (1...Self.length(ofMonth: month, year: year)).contains(day)
            else { return nil }
            number = Self.days(year: year, month: month, day: day)
        }

        init(number: Int) { self.number = number }

        /// `YYYY-MM-DD`: names a recurring send's occurrence.
        var iso: String {
            let (year, month, day) = UTCTimestamp.civil(fromDays: Int64(number))
            return String(format: "%04d-%02d-%02d", year, month, day)
        }

        private static func length(ofMonth month: Int, year: Int) -> Int {
            switch month {
            case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
            case 4, 6, 9, 11: 30
            default: 31
            }
        }

        /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
        private static func days(year: Int, month: Int, day: Int) -> Int {
            let y = month <= 2 ? year - 1 : year
            let era = (y >= 0 ? y : y - 399) / 400
            let yearOfEra = y - era * 400
            let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
            let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
            return era * 146_097 + dayOfEra - 719_468
        }
    }

    /// The zone's day and minute of the day at `instant`.
    func local(_ instant: Date) -> (day: Day, minute: Int) {
        let seconds = Int(instant.timeIntervalSince1970.rounded(.down)) + zone.secondsFromGMT(for: instant)
        let day = Int((Double(seconds) / 86_400).rounded(.down))
        return (Day(number: day), (seconds - day * 86_400) / 60)
    }

    /// The instant the zone's clocks show `minute` of `day`: its first occurrence when the clocks
    /// show it twice, the end of the gap when they skip it.
    func instant(_ day: Day, minute: Int) -> Date {
        let local = Double(day.number * 86_400 + minute * 60)
        // The offsets in force a day either side cover every change near this time.
        let offsets = Set([-86_400.0, 0, 86_400].map { Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: local + $0))) })
        let matching = offsets.map { local - $0 }.filter { Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: $0))) == local - $0 }
        if let first = matching.min() { return Date(timeIntervalSince1970: first) }
        // In a gap: the clocks jump from before `local` to after it. The jump happens between
        // the instants `local` would be at under each offset; the first instant after it is
        // the gap's end.
        var (low, high) = (offsets.map { local - $0 }.min() ?? local, offsets.map { local - $0 }.max() ?? local)
        while high - low > 1 {
            let middle = ((low + high) / 2).rounded(.down)
            let shown = middle + Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: middle)))
            if shown < local { low = middle } else { high = middle }
        }
        return Date(timeIntervalSince1970: high)
    }
}
