/// Outcomes waiting for a pipeline's webhooks: work items (`WorkQueue`) of the kind
/// `webhook`, written in the transaction of the deliveries they tell of, so a daemon killed
/// after a delivery still tells of it, and removed once the receiver took them. They wait in
/// the store, not in memory, however long a receiver is down.
extension WorkQueue {
    /// The pipeline's outcomes due for sending that no daemon holds, now this one's for `lease`,
    /// oldest first, each with its `batch`. A batch is fixed by the claim that first
    /// takes its outcomes (`WebhookOutcome.batches`) and claimed whole from then on, so what a
    /// receiver refused, or a killed daemon may have sent, goes again with the same companions
    /// under the same `webhook-id`. At most `limit` are chosen, plus the rest of a batch the
    /// limit cut.
    public func claimWebhookOutcomes(limit: Int, lease: Duration) async throws -> [WebhookOutcome] {
        let claimed = try await claim(WebhookOutcome.kind, limit: limit, lease: lease) { fresh in
            let outcomes = fresh.compactMap { WebhookOutcome(work: $0, pipeline: pipeline) }
            let readable = Set(outcomes.map(\.id))
            // An item that is no outcome (a later version's) could never be sent: claimed in a
            // group of its own, then removed, so it does not take a claim's places for ever.
            let unreadable = fresh.map(\.id).filter { !readable.contains($0) }
            return WebhookOutcome.batches(outcomes).map { (group: WebhookOutcome.group(batch: $0.batch, target: $0.target), ids: $0.ids) }
                + (unreadable.isEmpty ? [] : [("unreadable", unreadable)])
        }
        let unreadable = claimed.filter { $0.group == "unreadable" }
        try await complete(WebhookOutcome.kind, keys: Set(unreadable.map(\.key)))
        return claimed.compactMap { $0.group == "unreadable" ? nil : WebhookOutcome(work: $0, pipeline: pipeline) }
    }
}
