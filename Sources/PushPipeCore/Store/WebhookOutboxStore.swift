/// Outcomes waiting for a pipeline's webhooks: written in the transaction of the deliveries
/// they tell of, so a daemon killed after a delivery still tells of it, and removed once the
/// receiver took them. They wait in the store, not in memory, however long a receiver is down.
public protocol WebhookOutboxStore: Sendable {
    /// The pipeline's outcomes due for sending (their retry time came, on the store's clock) that
    /// no daemon holds, now this one's for `lease` seconds, oldest first, each with its `batch`.
    /// A batch is fixed by the claim that first takes its outcomes (`WebhookOutcome.batches`) and
    /// claimed whole from then on, so what a receiver refused, or a killed daemon may have sent,
    /// goes again with the same companions under the same `webhook-id`. At most `limit` are
    /// chosen, plus the rest of a batch the limit cut.
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
    /// The `webhook-id` it is sent under, kept by the store from its first claim (nil before).
    public var batch: String?

    public init(id: Int64 = 0, pipeline: String, target: String, outcomeID: String, payload: JSON, attempts: Int = 0, createdAt: Double,
                batch: String? = nil) {
        self.id = id
        self.pipeline = pipeline
        self.target = target
        self.outcomeID = outcomeID
        self.payload = payload
        self.attempts = attempts
        self.createdAt = createdAt
        self.batch = batch
    }

    /// Outcomes not yet in a batch (`id`, `target`, `outcomeID` are what count), as the batches a
    /// claim gives them: one per webhook, named by its outcomes' ids (`batchID(outcomeIDs:)`).
    /// Every store makes its batches here, so they are the same whichever store holds them.
    public static func batches(_ fresh: [WebhookOutcome]) -> [(batch: String, ids: [Int64])] {
        Dictionary(grouping: fresh, by: \.target).sorted { $0.key < $1.key }.map { _, outcomes in
            (batchID(outcomeIDs: outcomes.map(\.outcomeID)), outcomes.map(\.id).sorted())
        }
    }

    /// A batch's `webhook-id`: it depends only on the outcomes' ids, each stable and unique, so
    /// two batches never share one.
    public static func batchID(outcomeIDs: [String]) -> String {
        "msg_" + StableHash.hex(outcomeIDs.sorted().joined(separator: "\n"))
    }
}
