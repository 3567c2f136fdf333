/// Sends one signed batch of outcomes to a webhook: the HTTP client and the signing live in a
/// later layer (`StandardWebhookPoster`), the queue and its retries here.
public protocol WebhookPoster: Sendable {
    func post(_ message: WebhookMessage, to target: WebhookTarget) async -> WebhookAnswer
}

/// One POST: its body and the id and time it is signed with.
public struct WebhookMessage: Sendable, Equatable {
    /// `webhook-id`: the same for the same outcomes, so a batch sent again is known as one.
    public var id: String
    /// `webhook-timestamp`, UNIX seconds.
    public var timestamp: Int64
    public var body: JSON

    public init(id: String, timestamp: Int64, body: JSON) {
        self.id = id
        self.timestamp = timestamp
        self.body = body
    }
}

public enum WebhookAnswer: Sendable, Equatable {
    /// A 2xx: the receiver has them.
    case taken
    /// Anything else (an error status, no answer): tried again later, after `seconds` when the
    /// receiver said (`Retry-After`).
    case retry(seconds: Double?, reason: String)
}
