/// What a store's pipeline handle shares with the other store's: writes that go through the
/// group commit (`OutcomeWrite`), and recipients read through the token cache. Written once
/// here; a handle gives its store's commit, cache and the read behind the cache.
package protocol GroupCommittedPipelineStore: PipelineStore {
    var outcomes: GroupCommit<OutcomeWrite> { get }
    var tokenCache: TokenCache { get }
    /// The tokens of one kind (of one user, or of every user), from the database.
    func readTokens(user: String?, kind: String) async throws -> [DeviceToken]
    /// The tokens of every kind of `users`, by query (user and kind), each list ordered as
    /// `readTokens(user:kind:)` orders it: one read for many users.
    func readTokens(ofEveryKindFor users: [String]) async throws -> [TokenCache.Query: [DeviceToken]]
}

extension GroupCommittedPipelineStore {
    package func tokens(user: String?, kind: String) async throws -> [DeviceToken] {
        try await tokenCache.tokens(for: TokenCache.Query(pipeline: name, user: user, kind: kind)) {
            try await readTokens(user: user, kind: kind)
        }
    }

    /// One read for a poller's claim or a batch of events instead of one per user, of the users
    /// the cache has not read lately.
    package func warmTokens(users: [String]) async throws {
        let users = tokenCache.unwarmed(users, pipeline: name)
        guard !users.isEmpty else { return }
        let generation = tokenCache.currentGeneration()
        let tokens = try await readTokens(ofEveryKindFor: users)
        tokenCache.store(tokens, readAt: generation, ofEveryKindFor: users, pipeline: name)
    }

    package func setState(_ writes: [StateWrite]) async throws {
        try await outcomes.submitUnlessEmpty(.state(writes, pipeline: name))
    }

    package func recordOutcome(
        deliveries: [DeliveryRow],
        state: [StateWrite],
        events: [EventRecord],
        webhooks: [WebhookOutcome],
        finishing: [Event.QueueItem],
        progress: [WorkItem]
    ) async throws {
        try await outcomes.submitUnlessEmpty(
            .outcome(
                deliveries: deliveries,
                state: state,
                events: events,
                webhooks: webhooks,
                finishing: finishing,
                progress: progress,
                pipeline: name
            )
        )
    }

    package func dequeue(source: String, key: String) async throws {
        try await outcomes.submit(.dequeue(pipeline: name, kind: QueuedEvent.kind(source: source), key: key))
    }
}
