/// Where sources and routes put events. Submitting suspends while the pipeline is full.
public protocol EventSink: Sendable {
    /// Queues the event; returns once a worker took it.
    func submit(_ event: Event) async throws
    /// Queues the event and waits for its report (the `/check` routes, the simulator).
    func submitAndWait(_ event: Event) async throws -> EventReport
    /// How many more events the pipeline could start now. A source that takes its events from
    /// a shared queue takes no more: what waits for room here waits with its lease held.
    var room: Int { get }
}

extension EventSink {
    public var room: Int { .max }
}
