import PushPipeCore

/// A time of day as a pipeline writes it, `HH:MM` (24-hour): a minute of the day.
struct WallClockTime: Sendable, Hashable {
    var minute: Int

    static let expected = "a time of day as HH:MM, 00:00 to 23:59 (24:00 only as a window's end)"

    /// `24:00` only where it means the end of a day (`allowingEndOfDay`).
    init(_ text: String, keyPath: String, allowingEndOfDay: Bool = false) throws {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2, let hour = Int(parts[0]), let minute = Int(parts[1]),
            parts[0].allSatisfy(\.isASCII), parts[1].allSatisfy(\.isASCII),
            (0...59).contains(minute), (0...23).contains(hour) || (allowingEndOfDay && hour == 24 && minute == 0)
        else { throw ConfigurationValueError(keyPath: keyPath, "'\(text)' is not a time of day", expected: Self.expected) }
        self.minute = hour * 60 + minute
    }
}
