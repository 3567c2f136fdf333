import Foundation
import PushPipeCore
import Testing

@testable import PushPipeStages

@Suite struct WeeklyWindowsTests {
    typealias Window = WeeklyWindows.Window
    static let berlin = ZonedClock(zone: TimeZone(identifier: "Europe/Berlin")!)
    static func instant(_ iso: String) -> Date { try! Date(iso, strategy: .iso8601) }
    static let weekdays = ["mon", "tue", "wed", "thu", "fri"]

    @Test func anOpenInstantIsItself() throws {
        let windows = try WeeklyWindows(windows: [Window(days: Self.weekdays, start: "08:00", end: "20:00")], quiet: nil, holidays: [])
        // Wednesday 12:00 in Berlin.
        let noon = Self.instant("2026-06-10T10:00:00Z")
        #expect(windows.opening(from: noon, Self.berlin) == noon)
    }

    @Test func afterTheLastWindowOfTheWeekTheNextWeeksFirstOpens() throws {
        let windows = try WeeklyWindows(windows: [Window(days: Self.weekdays, start: "08:00", end: "20:00")], quiet: nil, holidays: [])
        // Friday 21:00 Berlin → Monday 08:00 Berlin.
        #expect(windows.opening(from: Self.instant("2026-06-12T19:00:00Z"), Self.berlin) == Self.instant("2026-06-15T06:00:00Z"))
        // Exactly at the end: closed.
        #expect(windows.opening(from: Self.instant("2026-06-12T18:00:00Z"), Self.berlin) == Self.instant("2026-06-15T06:00:00Z"))
        // A minute before it opens.
        #expect(windows.opening(from: Self.instant("2026-06-15T05:59:00Z"), Self.berlin) == Self.instant("2026-06-15T06:00:00Z"))
    }

    @Test func quietHoursWrapPastMidnightAndPastSunday() throws {
        let windows = try WeeklyWindows(windows: nil, quiet: [Window(days: ["sun"], start: "22:00", end: "07:00")], holidays: [])
        // Sunday 23:00 → Monday 07:00 (the quiet span crosses the week's end).
        #expect(windows.opening(from: Self.instant("2026-06-14T21:00:00Z"), Self.berlin) == Self.instant("2026-06-15T05:00:00Z"))
        // Monday 06:59 is still quiet; Monday 07:00 is open; Saturday 23:00 is open (only Sunday's night is quiet).
        #expect(windows.opening(from: Self.instant("2026-06-15T04:59:00Z"), Self.berlin) == Self.instant("2026-06-15T05:00:00Z"))
        let saturdayNight = Self.instant("2026-06-13T21:00:00Z")
        #expect(windows.opening(from: saturdayNight, Self.berlin) == saturdayNight)
    }

    @Test func aWindowThatWrapsIsOpenAfterMidnight() throws {
        let windows = try WeeklyWindows(windows: [Window(days: ["fri"], start: "22:00", end: "02:00")], quiet: nil, holidays: [])
        let saturdayOne = Self.instant("2026-06-12T23:00:00Z")  // Saturday 01:00 Berlin
        #expect(windows.opening(from: saturdayOne, Self.berlin) == saturdayOne)
        // Saturday 02:00 → next Friday 22:00.
        #expect(windows.opening(from: Self.instant("2026-06-13T00:00:00Z"), Self.berlin) == Self.instant("2026-06-19T20:00:00Z"))
    }

    @Test func aQuietWindowOfNoLengthLeavesEveryTimeOpen() throws {
        let windows = try WeeklyWindows(windows: nil, quiet: [Window(days: WeeklyWindows.dayNames, start: "00:00", end: "00:00")], holidays: [])
        let night = Self.instant("2026-06-10T01:00:00Z")
        #expect(windows.opening(from: night, Self.berlin) == night)
    }

    @Test func aHolidayIsClosedAllDay() throws {
        let windows = try WeeklyWindows(
            windows: [Window(days: WeeklyWindows.dayNames, start: "09:00", end: "17:00")],
            quiet: nil,
            holidays: ["2026-12-25", "2026-12-26"]
        )
        // Christmas Eve 18:00 → the 27th at 09:00 (two holidays skipped), in winter time.
        #expect(windows.opening(from: Self.instant("2026-12-24T17:00:00Z"), Self.berlin) == Self.instant("2026-12-27T08:00:00Z"))
        #expect(windows.opening(from: Self.instant("2026-12-25T10:00:00Z"), Self.berlin) == Self.instant("2026-12-27T08:00:00Z"))
    }

    @Test func anOpeningTheClocksSkipIsTheGapsEnd() throws {
        let windows = try WeeklyWindows(windows: [Window(days: WeeklyWindows.dayNames, start: "02:30", end: "05:00")], quiet: nil, holidays: [])
        // Spring-forward night: 02:30 does not exist in Berlin; the window opens at 03:00 CEST.
        #expect(windows.opening(from: Self.instant("2026-03-28T23:00:00Z"), Self.berlin) == Self.instant("2026-03-29T01:00:00Z"))
        let newYork = ZonedClock(zone: TimeZone(identifier: "America/New_York")!)
        #expect(windows.opening(from: Self.instant("2026-03-08T05:00:00Z"), newYork) == Self.instant("2026-03-08T07:00:00Z"))
    }

    @Test func aConfigurationThatCannotBeReadSaysWhereItIsWrong() {
        func keyPath(_ make: () throws -> WeeklyWindows) -> String? {
            do {
                _ = try make()
                return nil
            } catch let error as ConfigurationValueError {
                return error.keyPath
            } catch {
                return "\(error)"
            }
        }
        #expect(keyPath { try WeeklyWindows(windows: nil, quiet: nil, holidays: []) } == "windows")
        #expect(keyPath { try WeeklyWindows(windows: [], quiet: [], holidays: []) } == "windows")
        #expect(
            keyPath { try WeeklyWindows(windows: [Window(days: ["mon"], start: "8:00", end: "20:00")], quiet: nil, holidays: []) }
                == "windows[0].start"
        )
        #expect(
            keyPath { try WeeklyWindows(windows: [Window(days: ["mon"], start: "08:00", end: "24:01")], quiet: nil, holidays: []) }
                == "windows[0].end"
        )
        #expect(
            keyPath { try WeeklyWindows(windows: [Window(days: [], start: "08:00", end: "09:00")], quiet: nil, holidays: []) } == "windows[0].days"
        )
        #expect(
            keyPath { try WeeklyWindows(windows: nil, quiet: [Window(days: WeeklyWindows.dayNames, start: "00:00", end: "24:00")], holidays: []) }
                == "quiet"
        )
        #expect(
            keyPath { try WeeklyWindows(windows: [Window(days: WeeklyWindows.dayNames, start: "09:00", end: "09:00")], quiet: nil, holidays: []) }
                == "windows"
        )
        #expect(
            keyPath { try WeeklyWindows(windows: [Window(days: ["mon"], start: "08:00", end: "09:00")], quiet: nil, holidays: ["2026-02-30"]) }
                == "holidays[0]"
        )
        #expect(keyPath { try WeeklyWindows(windows: [Window(days: ["mon"], start: "08:00", end: "24:00")], quiet: nil, holidays: []) } == nil)
    }
}
