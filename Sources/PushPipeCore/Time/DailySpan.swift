/// A user's own quiet hours as a settings route takes them and timing filters read them:
/// `22:00-07:00` (wrapping past midnight when the end is before the start), or `off` for none.
/// Parsed once where it enters, so a filter never meets a value it cannot read.
public struct DailySpan: Sendable, Equatable {
    /// Minutes of the day; `end` may be 1440 (`24:00`). Nil for `off`.
    public var start: Int
    public var end: Int
    public var isOff: Bool

    public static let expected = "quiet hours as HH:MM-HH:MM (such as 22:00-07:00), or off"

    public init?(_ text: String) {
        if text == "off" {
            (start, end, isOff) = (0, 0, true)
            return
        }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        // A whole day of quiet would never send: not quiet hours.
        guard parts.count == 2, let start = Self.minute(String(parts[0])), let end = Self.minute(String(parts[1]), allowingEndOfDay: true),
            !(start == 0 && end == 1440)
        else { return nil }
        (self.start, self.end, isOff) = (start, end, false)
    }

    /// `HH:MM` (24-hour) as a minute of the day; `24:00` only where it ends a day.
    public static func minute(_ text: String, allowingEndOfDay: Bool = false) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2, parts.allSatisfy({ $0.allSatisfy(\.isASCII) }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), (0...59).contains(minute),
            (0...23).contains(hour) || (allowingEndOfDay && hour == 24 && minute == 0)
        else { return nil }
        return hour * 60 + minute
    }

    /// A minute of the day as `HH:MM`, as `minute(_:)` reads it.
    public static func text(_ minute: Int) -> String { String(format: "%02d:%02d", minute / 60, minute % 60) }
}
