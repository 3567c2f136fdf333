/// The transport of a dry run: the pipeline's own transport prepares each request, exactly as
/// it would send it, and this one prints it instead of sending. It reaches no provider, so
/// the real transport's connections and readiness are not started either.
struct PrintingTransport: Transport {
    let base: any Transport
    let pipeline: String

    /// The provider id of what a dry run "sent".
    static let providerID = "dry-run"

    func prepare(_ notification: RenderedNotification, context: StageContext) throws -> OutgoingRequest {
        try base.prepare(notification, context: context)
    }

    func send(_ request: OutgoingRequest, context: StageContext) async -> TransportOutcome {
        context.output.print("[\(pipeline)] would send:\n\(request.printable)\n")
        return .delivered(providerID: Self.providerID)
    }

    func send(batch requests: [OutgoingRequest], context: StageContext) async -> [TransportOutcome] {
        var outcomes: [TransportOutcome] = []
        for request in requests { outcomes.append(await send(request, context: context)) }
        return outcomes
    }

    var preferredExecutor: (any TaskExecutor)? { base.preferredExecutor }
    var destinationsAreUserChosen: Bool { base.destinationsAreUserChosen }
    var sendsNothing: Bool { true }
}
