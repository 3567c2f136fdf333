import PushPipeCore
import PushPipeTesting
import Testing

@testable import PushPipeStages

/// The poster bounds the whole answer, not only its head, so a receiver that sends a head and
/// then never its body cannot hold the batch, and the pipeline's webhook worker, for ever.
@Suite(.timeLimit(.minutes(1))) struct StandardWebhookPosterTests {
    @Test func aReceiverThatNeverSendsItsBodyIsTriedAgainLater() async throws {
        let receiver = try await StallingHTTPServer.start()
        let poster = StandardWebhookPoster(timeout: .seconds(1))
        let answer = await poster.post(
            WebhookMessage(id: "msg_1", timestamp: 1, body: ["type": "delivery"]),
            to: WebhookTarget(url: "\(receiver.baseURL)/hooks", secret: "whsec_AAAA")
        )
        await receiver.stop()
        guard case .retry(_, let reason) = answer else {
            Issue.record("expected a retry, got \(answer)")
            return
        }
        #expect(reason.contains("deadline"), "reason: \(reason)")
    }
}
