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
    /// Its work item's key: the webhook and the outcome id, a newline between them (which no URL
    /// holds), so the same outcome written twice while it waits is sent once. As stored: an item
    /// an earlier version moved in keeps the key it was given then.
    public var key: String

    public init(
        id: Int64 = 0,
        pipeline: String,
        target: String,
        outcomeID: String,
        payload: JSON,
        attempts: Int = 0,
        createdAt: Double,
        batch: String? = nil
    ) {
        self.id = id
        self.pipeline = pipeline
        self.target = target
        self.outcomeID = outcomeID
        self.payload = payload
        self.attempts = attempts
        self.createdAt = createdAt
        self.batch = batch
        key = target + "\n" + outcomeID
    }

    /// Outcomes not yet in a batch (`id`, `target`, `outcomeID` are what count), as the batches a
    /// claim gives them: one per webhook, named by its outcomes' ids (`batchID(outcomeIDs:)`).
    /// Every store makes its batches here, so they are the same whichever store holds them.
    public static func batches(_ fresh: [WebhookOutcome]) -> [(batch: String, target: String, ids: [Int64])] {
        Dictionary(grouping: fresh, by: \.target).sorted { $0.key < $1.key }.map { target, outcomes in
            (batchID(outcomeIDs: outcomes.map(\.outcomeID)), target, outcomes.map(\.id).sorted())
        }
    }

    /// The work group a batch waits in: its id and its webhook's. Two webhooks told of the same
    /// outcomes have batches of the same id, and each is claimed, sent and retried on its own.
    static func group(batch: String, target: String) -> String { batch + "@" + StableHash.hex(target) }

    /// The batch of a work group (`group(batch:target:)`, or a batch id alone as earlier
    /// versions named groups).
    static func batch(group: String) -> String { String(group.prefix { $0 != "@" }) }

    /// A batch's `webhook-id`: it depends only on the outcomes' ids, each stable and unique, so
    /// two batches never share one.
    public static func batchID(outcomeIDs: [String]) -> String {
        "msg_" + StableHash.hex(outcomeIDs.sorted().joined(separator: "\n"))
    }
}

extension WebhookOutcome {
    /// The kind of work item an outcome waits as.
    public static let kind = "webhook"

    /// As the outbox keeps it: one item per outcome and webhook.
    public var work: WorkItem {
        WorkItem(
            id: id,
            kind: Self.kind,
            key: key,
            payload: ["target": .string(target), "outcome_id": .string(outcomeID), "payload": payload],
            attempts: attempts,
            createdAt: createdAt,
            group: batch.map { Self.group(batch: $0, target: target) }
        )
    }

    /// Nil for an item that is not an outcome (written by a later version, say).
    public init?(work: WorkItem, pipeline: String) {
        guard let target = work.payload["target"]?.stringValue, let outcomeID = work.payload["outcome_id"]?.stringValue else { return nil }
        self.init(
            id: work.id,
            pipeline: pipeline,
            target: target,
            outcomeID: outcomeID,
            payload: work.payload["payload"] ?? .null,
            attempts: work.attempts,
            createdAt: work.createdAt,
            batch: work.group.map(Self.batch(group:))
        )
        key = work.key
    }
}
