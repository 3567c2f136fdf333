import PushPipeCore

/// Which days a recurring send goes on: every day, or every week on some days (the first
/// occurrence's weekday when none are named). The time of day is the schedule's `local_time`.
struct Recurrence: Sendable {
    enum Every: String, CaseIterable, Sendable { case daily, weekly }

    let every: Every
    /// Monday 0 … Sunday 6; nil: weekly on the first occurrence's day.
    let days: Set<Int>?

    static let schema = Schema([
        SchemaKey(
            "repeat",
            .oneOf(Every.allCases.map(\.rawValue)),
            "Sends again at `local_time` every day, or every week (on `repeat_days`), until `until_field`'s instant; "
                + "each occurrence is the event under the id `<id>@<local date>`, the last one under its own id."
        ),
        SchemaKey("repeat_days", .list(.oneOf(WeeklyWindows.dayNames)), "With `repeat: weekly`: the days it goes on (the first one's when omitted)."),
        SchemaKey("until_field", .string, "A body field holding the instant (ISO 8601 or UNIX seconds) after which a repeating send stops."),
    ])

    init?(every: String?, days: [String]?, untilField: String?, hasLocalTime: Bool) throws {
        guard let every else {
            for (key, given) in [("repeat_days", days != nil), ("until_field", untilField != nil)] where given {
                throw ConfigurationValueError(keyPath: key, "only a repeating send has one", expected: "`repeat: daily` or `repeat: weekly`")
            }
            return nil
        }
        guard hasLocalTime else {
            throw ConfigurationValueError(keyPath: "repeat", "a repeating send needs its time of day", expected: "`local_time` (HH:MM)")
        }
        self.every = Every(rawValue: every) ?? .daily
        if let days {
            guard self.every == .weekly, !days.isEmpty else {
                throw ConfigurationValueError(keyPath: "repeat_days", "days are for a weekly send", expected: "`repeat: weekly` and at least one day")
            }
            self.days = Set(days.compactMap(WeeklyWindows.dayNames.firstIndex(of:)))
        } else {
            self.days = nil
        }
    }

    /// Whether a first occurrence may fall on `day`.
    func allows(_ day: ZonedClock.Day) -> Bool { days?.contains(day.weekday) ?? true }

    /// The day of the occurrence after one on `day`.
    func day(after day: ZonedClock.Day) -> ZonedClock.Day {
        switch every {
        case .daily: return ZonedClock.Day(number: day.number + 1)
        case .weekly:
            guard let days else { return ZonedClock.Day(number: day.number + 7) }
            let next = (1...7).first { days.contains((day.weekday + $0) % 7) } ?? 7
            return ZonedClock.Day(number: day.number + next)
        }
    }
}
