import Foundation
import Testing

@testable import PushPipeStages

/// Daylight saving, in zones with both kinds of change and a 30-minute one: a time of day the
/// clocks skip moves to the next valid minute, and one they show twice is its first occurrence.
@Suite struct ZonedClockTests {
    static func instant(_ iso: String) -> Date { try! Date(iso, strategy: .iso8601) }

    static func at(_ zone: String, _ date: String, _ hour: Int, _ minute: Int) -> Date {
        let clock = ZonedClock(zone: TimeZone(identifier: zone)!)
        return clock.instant(ZonedClock.Day(iso: date)!, minute: hour * 60 + minute)
    }

    @Test(arguments: [
        // Spring forward: 02:00 → 03:00 (New York, Berlin); 02:00 → 02:30 (Lord Howe).
        ("America/New_York", "2026-03-08", 2, 30, "2026-03-08T07:00:00Z"),
        ("Europe/Berlin", "2026-03-29", 2, 30, "2026-03-29T01:00:00Z"),
        ("Australia/Lord_Howe", "2026-10-04", 2, 15, "2026-10-03T15:30:00Z"),
        // Fall back: the first of the two occurrences (still daylight time).
        ("America/New_York", "2026-11-01", 1, 30, "2026-11-01T05:30:00Z"),
        ("Europe/Berlin", "2026-10-25", 2, 30, "2026-10-25T00:30:00Z"),
        // Ordinary times either side of the changes.
        ("America/New_York", "2026-03-08", 1, 59, "2026-03-08T06:59:00Z"),
        ("America/New_York", "2026-03-08", 3, 0, "2026-03-08T07:00:00Z"),
        ("Europe/Berlin", "2026-10-25", 3, 0, "2026-10-25T02:00:00Z"),
        ("Asia/Kolkata", "2026-06-01", 9, 0, "2026-06-01T03:30:00Z"),
        ("UTC", "2028-02-29", 23, 59, "2028-02-29T23:59:00Z"),
    ])
    func aTimeOfDayIsItsFirstValidInstant(_ zone: String, _ date: String, _ hour: Int, _ minute: Int, _ expected: String) {
        #expect(Self.at(zone, date, hour, minute) == Self.instant(expected))
    }

    @Test func anInstantReadsAsItsZonesDayAndMinute() {
        let berlin = ZonedClock(zone: TimeZone(identifier: "Europe/Berlin")!)
        // 23:30 UTC on a Sunday is 01:30 on Monday in summer Berlin.
        let (day, minute) = berlin.local(Self.instant("2026-06-07T23:30:00Z"))
        #expect(day == ZonedClock.Day(iso: "2026-06-08"))
        #expect(day.weekday == 0)
        #expect(minute == 90)
        // The second 02:30 of the autumn night reads 02:30 too.
        #expect(berlin.local(Self.instant("2026-10-25T01:30:00Z")).minute == 150)
        #expect(ZonedClock.Day(iso: "1970-01-01")?.weekday == 3)
        #expect(ZonedClock.Day(iso: "1969-12-31")?.weekday == 2)
    }

    @Test(arguments: ["2026-02-29", "2026-13-01", "2026-1-01", "26-01-01", "2026-01-32", "", "2026-01-01T00:00"])
    func aDateThatIsNotOneIsRefused(_ text: String) {
        #expect(ZonedClock.Day(iso: text) == nil)
    }
}
