import PushPipeCore

extension Store {
    /// A user's history entry, as the runtime records one: with the delivery that reached them.
    func appendHistory(_ entry: HistoryEntry) async throws {
        try await pipeline(entry.pipeline).recordOutcome(
            deliveries: [.of(entry.eventID, user: entry.user, token: "history", at: entry.createdAt, history: entry.record)],
            state: []
        )
    }
}
