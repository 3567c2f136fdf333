/// Where sources and routes put events. Submitting suspends while the pipeline is full.
public protocol EventSink: Sendable {
    /// Queues the event; returns once a worker took it.
    func submit(_ event: Event) async throws
    /// Queues the event and waits for its report (the `/check` routes, the simulator).
    func submitAndWait(_ event: Event) async throws -> EventReport
}
