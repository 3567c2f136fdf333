/// Outcomes waiting for a pipeline's webhooks: written in the transaction of the deliveries
/// they tell of, so a daemon killed after a delivery still tells of it, and removed once the
/// receiver took them. They wait in the store, not in memory, however long a receiver is down.
public protocol WebhookOutboxStore: Sendable {
    /// At most `limit` of the pipeline's outcomes due for sending (their retry time came, on the
    /// store's clock) that no daemon holds, now this one's for `lease` seconds, oldest first.
    func claimWebhookOutcomes(pipeline: String, limit: Int, lease: Double) async throws -> [WebhookOutcome]
    /// The receiver took them.
    func removeWebhookOutcomes(ids: [Int64]) async throws
    /// The receiver failed: tried again in `delay` seconds, by whichever daemon claims them then.
    func retryWebhookOutcomes(ids: [Int64], after delay: Double) async throws
}

/// One outcome for one webhook, as the outbox keeps it.
public struct WebhookOutcome: Sendable, Equatable {
    /// Assigned by the store (0 before).
    public var id: Int64
    public var pipeline: String
    /// The webhook's URL: its secret is read from the pipeline when it is sent, so a rotated
    /// secret signs what still waits.
    public var target: String
    /// Stable for this outcome: receivers drop what they saw already.
    public var outcomeID: String
    public var payload: JSON
    /// Attempts made so far.
    public var attempts: Int
    public var createdAt: Double

    public init(id: Int64 = 0, pipeline: String, target: String, outcomeID: String, payload: JSON, attempts: Int = 0, createdAt: Double) {
        self.id = id
        self.pipeline = pipeline
        self.target = target
        self.outcomeID = outcomeID
        self.payload = payload
        self.attempts = attempts
        self.createdAt = createdAt
    }
}
