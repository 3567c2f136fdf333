import PushPipeCore
import Testing

extension StoreContractTests {
    /// Outcomes written with their deliveries wait until claimed; a claim holds them for its
    /// lease; a failed send puts them back for later; a taken one is gone; age prunes the rest.
    func webhookOutbox(_ store: any Store) async throws {
        let outcomes = (1...3).map { index in
            WebhookOutcome(pipeline: "w", target: "http://127.0.0.1:1/hooks", outcomeID: "w/e\(index)/delivered", payload: ["n": .int(Int64(index))],
                           createdAt: Double(index))
        }
        try await store.recordOutcome(deliveries: [], history: [], state: [], events: [], webhooks: outcomes, pipeline: "w")
        let claimed = try await store.claimWebhookOutcomes(pipeline: "w", limit: 2, lease: 60)
        #expect(claimed.map(\.outcomeID) == ["w/e1/delivered", "w/e2/delivered"], "oldest first")
        #expect(claimed.first?.payload == ["n": 1] && claimed.first?.attempts == 0)
        #expect(try await store.claimWebhookOutcomes(pipeline: "w", limit: 10, lease: 60).map(\.outcomeID) == ["w/e3/delivered"],
                "claimed ones are held")
        #expect(try await store.claimWebhookOutcomes(pipeline: "other", limit: 10, lease: 60).isEmpty)

        try await store.removeWebhookOutcomes(ids: [claimed[0].id])
        try await store.retryWebhookOutcomes(ids: [claimed[1].id], after: -1)
        let again = try await store.claimWebhookOutcomes(pipeline: "w", limit: 10, lease: 60)
        #expect(again.map(\.outcomeID) == ["w/e2/delivered"] && again.first?.attempts == 1, "put back, its attempt counted")
        try await store.retryWebhookOutcomes(ids: again.map(\.id), after: 3600)
        #expect(try await store.claimWebhookOutcomes(pipeline: "w", limit: 10, lease: 60).isEmpty, "not due before its backoff")

        #expect(try await store.pruneWebhookOutcomes(pipeline: "w", createdBefore: 2.5, limit: 10) == 1)
        #expect(try await store.pruneWebhookOutcomes(pipeline: "w", createdBefore: 100, limit: 10) == 1)
    }
}
