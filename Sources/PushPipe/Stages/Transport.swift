/// Delivers notifications to a provider.
///
/// `prepare` is pure and deterministic so that dry runs and pipeline tests can show the
/// exact request; `send` performs it and reports one `TransportOutcome`.
public protocol Transport: Sendable {
    func prepare(_ notification: RenderedNotification, context: StageContext) throws -> OutgoingRequest
    func send(_ request: OutgoingRequest, context: StageContext) async -> TransportOutcome
}
