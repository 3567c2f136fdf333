import PushPipeCore

/// A time of day as a pipeline writes it, `HH:MM` (24-hour): a minute of the day.
struct WallClockTime: Sendable, Hashable {
    var minute: Int

    static let expected = "a time of day as HH:MM, 00:00 to 23:59 (24:00 only as a window's end)"

    /// `24:00` only where it means the end of a day (`allowingEndOfDay`).
    init(_ text: String, keyPath: String, allowingEndOfDay: Bool = false) throws {
        guard let minute = DailySpan.minute(text, allowingEndOfDay: allowingEndOfDay) else {
            throw ConfigurationValueError(keyPath: keyPath, "'\(text)' is not a time of day", expected: Self.expected)
        }
        self.minute = minute
    }
}
