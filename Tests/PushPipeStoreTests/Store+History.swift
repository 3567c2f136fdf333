import PushPipeCore

extension DeliveryStore {
    /// A history entry without a delivery of its own, as the runtime records one.
    func appendHistory(_ entry: HistoryEntry) async throws {
        try await recordOutcome(deliveries: [], history: [entry], state: [], pipeline: entry.pipeline)
    }
}
