/// Decides whether an event goes on, and may change it (drop items, attach state writes).
public protocol Filter: Sendable {
    func apply(to event: Event, context: StageContext) async throws -> FilterResult
}

public enum FilterResult: Sendable {
    case pass(Event)
    case drop(reason: String)
}
