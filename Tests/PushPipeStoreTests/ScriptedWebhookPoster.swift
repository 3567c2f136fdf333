import Foundation
import PushPipeCore

/// Answers each POST with the next scripted answer, then takes everything; keeps what it was sent.
final class ScriptedWebhookPoster: WebhookPoster, @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [WebhookAnswer]
    private var messages: [WebhookMessage] = []
    private var urls: [String] = []

    init(_ answers: [WebhookAnswer]) { self.answers = answers }

    var sent: [WebhookMessage] { lock.withLock { messages } }
    /// The webhook each message went to, in the order of `sent`.
    var targets: [String] { lock.withLock { urls } }

    func post(_ message: WebhookMessage, to target: WebhookTarget) async -> WebhookAnswer {
        lock.withLock {
            messages.append(message)
            urls.append(target.url)
            return answers.isEmpty ? .taken : answers.removeFirst()
        }
    }
}
