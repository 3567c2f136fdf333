import PushPipeCore

/// A sink for route handlers tested without a pipeline behind them: routes that post events
/// fail, the others never touch it.
public struct RefusingEventSink: EventSink {
    public struct Refused: Error {}
    public init() {}
    public func submit(_ event: Event) async throws { throw Refused() }
    public func submitAndWait(_ event: Event) async throws -> EventReport { throw Refused() }
    public var room: Int { 0 }
}
