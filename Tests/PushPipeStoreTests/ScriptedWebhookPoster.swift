import Foundation
import PushPipeCore

/// Answers each POST with the next scripted answer, then takes everything; keeps what it was sent.
final class ScriptedWebhookPoster: WebhookPoster, @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [WebhookAnswer]
    private var messages: [WebhookMessage] = []

    init(_ answers: [WebhookAnswer]) { self.answers = answers }

    var sent: [WebhookMessage] { lock.withLock { messages } }

    func post(_ message: WebhookMessage, to target: WebhookTarget) async -> WebhookAnswer {
        lock.withLock {
            messages.append(message)
            return answers.isEmpty ? .taken : answers.removeFirst()
        }
    }
}
