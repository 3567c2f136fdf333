/// Delivers notifications to a provider.
///
/// `prepare` is pure and deterministic so that dry runs and pipeline tests can show the
/// exact request; `send` performs it and reports one `TransportOutcome`.
public protocol Transport: Sendable {
    func prepare(_ notification: RenderedNotification, context: StageContext) throws -> OutgoingRequest
    func send(_ request: OutgoingRequest, context: StageContext) async -> TransportOutcome
    /// Where the pipeline's workers run, over what the sources name (`Source.preferredExecutor`);
    /// nil follows the sources. A transport whose connections frame and encrypt every request
    /// on an event loop keeps the workers off the loops: on two cores, rendering and recording
    /// queued behind the framing there and APNs throughput fell by a fifth.
    var preferredExecutor: (any TaskExecutor)? { get }
}

extension Transport {
    public var preferredExecutor: (any TaskExecutor)? { nil }
}
