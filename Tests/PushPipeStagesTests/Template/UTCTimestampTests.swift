import Foundation
import Testing

@testable import PushPipeStages

@Suite struct UTCTimestampTests {
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (1_758_474_319_701, "2025-09-21T17:05:19.701Z"),
        (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
    ])
    func milliseconds(_ value: Int64, _ expected: String) {
        #expect(UTCTimestamp.milliseconds(sinceEpoch: value) == expected)
    }

    @Test func microsecondsAsPythonWritesThem() {
        #expect(UTCTimestamp.microseconds(sinceEpoch: 1_649_431_061_900_560) == "2022-04-08T15:17:41.900560")
        #expect(UTCTimestamp.microseconds(sinceEpoch: 1_657_553_760_000_000) == "2022-07-11T15:36:00.000000")
    }

    /// The arithmetic against Foundation's Gregorian calendar over four centuries of random instants.
    @Test func agreesWithFoundationsCalendar() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let seconds = Int64.random(in: -2_208_988_800...10_413_792_000, using: &generator)  // 1900 to 2300
            let parts = calendar.dateComponents(
                [.year, .month, .day, .hour, .minute, .second],
                from: Date(timeIntervalSince1970: TimeInterval(seconds))
            )
            let expected = String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d.000000",
                parts.year!,
                parts.month!,
                parts.day!,
                parts.hour!,
                parts.minute!,
                parts.second!
            )
            #expect(UTCTimestamp.microseconds(sinceEpoch: seconds * 1_000_000) == expected, "at \(seconds)")
        }
    }
}
