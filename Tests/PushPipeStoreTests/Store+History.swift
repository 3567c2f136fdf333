import PushPipeCore

extension Store {
    /// A history entry without a delivery of its own, as the runtime records one.
    func appendHistory(_ entry: HistoryEntry) async throws {
        try await pipeline(entry.pipeline).recordOutcome(deliveries: [], history: [entry], state: [])
    }
}
