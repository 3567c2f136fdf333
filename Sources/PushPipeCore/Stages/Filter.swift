/// Decides whether an event goes on, and may change it (drop items, attach state writes).
public protocol Filter: Sendable {
    func apply(to event: Event, context: StageContext) async throws -> FilterResult
}

public enum FilterResult: Sendable {
    case pass(Event)
    /// `reason` is for people (logs, reports, the tap); `code` is a short fixed label
    /// (`setting_off`, `not_newer`) that metrics can count without a series per user.
    case drop(reason: String, code: String)
    /// Not yet: the event waits in the store and comes back at `until` (`EventHold`).
    case hold(EventHold)
    /// Kept in a digest another event carries (`EventHold.Kind.batched`): it ends here, and
    /// its status says which digest and when that closes.
    case batched(EventHold)
}
