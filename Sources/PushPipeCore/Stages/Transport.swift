/// Delivers notifications to a provider.
///
/// `prepare` is pure and deterministic so that dry runs and pipeline tests can show the
/// exact request; `send` performs it and reports one `TransportOutcome`.
public protocol Transport: Sendable {
    func prepare(_ notification: RenderedNotification, context: StageContext) throws -> OutgoingRequest
    func send(_ request: OutgoingRequest, context: StageContext) async -> TransportOutcome
    /// One attempt for each request, outcomes in the same order. A transport that can wait
    /// for many answers at once implements it; the default sends them concurrently one by one.
    func send(batch requests: [OutgoingRequest], context: StageContext) async -> [TransportOutcome]
    /// Where the pipeline's workers run, over what the sources name (`Source.preferredExecutor`);
    /// nil follows the sources. A transport whose connections frame and encrypt every request
    /// on an event loop keeps the workers off the loops, so that rendering and recording do not
    /// queue behind the framing there and slow the transport down.
    var preferredExecutor: (any TaskExecutor)? { get }
    /// Whether each request goes where a user chose (a Web Push subscription's push service),
    /// not to the one provider the pipeline is configured for. Such a destination's request to
    /// wait longer than `max_backoff` is not waited out: the notification ends unresolved at
    /// once, so a party anyone can be holds none of the pipeline's room.
    var destinationsAreUserChosen: Bool { get }
    /// Whether it reaches no provider at all (a dry run's `PrintingTransport`): its deliveries
    /// count as `dry_run` with no attempt made, and neither `max_rate` nor a pause holds them.
    var sendsNothing: Bool { get }
}

extension Transport {
    public var preferredExecutor: (any TaskExecutor)? { nil }
    public var destinationsAreUserChosen: Bool { false }
    public var sendsNothing: Bool { false }

    public func send(batch requests: [OutgoingRequest], context: StageContext) async -> [TransportOutcome] {
        await sendConcurrently(requests, context: context)
    }

    /// Each request on its own, all at once: a batch for a transport that has no batch of its own.
    public func sendConcurrently(_ requests: [OutgoingRequest], context: StageContext) async -> [TransportOutcome] {
        if requests.count == 1 { return [await send(requests[0], context: context)] }
        return await withTaskGroup(of: (Int, TransportOutcome).self) { group in
            for (index, request) in requests.enumerated() {
                group.addTask { (index, await self.send(request, context: context)) }
            }
            var outcomes = [TransportOutcome?](repeating: nil, count: requests.count)
            for await (index, outcome) in group { outcomes[index] = outcome }
            return outcomes.map { $0! }
        }
    }
}
