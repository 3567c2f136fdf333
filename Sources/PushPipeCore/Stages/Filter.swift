/// Decides whether an event goes on, and may change it (drop items, attach state writes).
public protocol Filter: Sendable {
    func apply(to event: Event, context: StageContext) async throws -> FilterResult
    /// Whether it reads the event's user's settings (through `StageContext.setting(user:key:)`
    /// or `settings(user:)`): then a batch's users' settings are read at once before the filters.
    var readsUserSettings: Bool { get }
}

extension Filter {
    public var readsUserSettings: Bool { false }
}

public enum FilterResult: Sendable {
    case pass(Event)
    /// `reason` is for people (logs, reports, the tap); `code` is a short fixed label
    /// (`setting_off`, `not_newer`) that metrics can count without a series per user.
    /// `as` says how its status reads (`DropKind`).
    case drop(reason: String, code: String, as: DropKind = .filtered)
    /// Not yet: the event waits in the store and comes back at `until` (`EventHold`).
    case hold(EventHold)
    /// Kept in a digest another event carries (`EventHold.Kind.batched`): it ends here, and
    /// its status says which digest and when that closes.
    case batched(EventHold)
    /// A recurring send falls due: `occurrence` (the event under an id of its own) goes on
    /// through the pipeline now, and the event waits again for the next one (`next`). The next
    /// wait is stored first, under a key its instant names: a kill before the occurrence was
    /// sent sends it again and stores the next wait once. No occurrence: this one is skipped
    /// (late, expired), and the event only waits again.
    case recur(occurrence: Event?, next: EventHold)
    /// An event for every user goes out as several, each for part of the users
    /// (`Event.audience`: one per time zone) and each waiting for its own instant: the copies
    /// are stored, and this event ends (dropped, code `split`), naming them.
    case split([(copy: Event, hold: EventHold)])
}

/// How a drop reads in an event's status: a limit on how often (`throttled`, `capped`) tells a
/// caller the event was one too many, not unwanted.
public enum DropKind: String, Sendable {
    case filtered
    /// Over a limit per key in one pipeline.
    case throttled
    /// Over a limit per person shared across pipelines.
    case capped
}
