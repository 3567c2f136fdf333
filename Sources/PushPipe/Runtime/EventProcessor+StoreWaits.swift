extension EventProcessor {
    /// Runs a stage's step again for as long as it fails only because the store is away (an
    /// outage, a connection the server cut): an accepted event must not fail for good for that.
    /// The chaos soak lost one that way, an event whose recipients could not be read during an
    /// outage: it failed, and its source, told it was processed, forgot it. Meanwhile the event
    /// holds its place in the pipeline, as an outcome being recorded does; a stop past the drain
    /// timeout gives up with the store's error, and the source keeps the event.
    func waitingForTheStore<Result>(_ event: Event, _ step: () async throws -> Result) async throws -> Result {
        var delay = Duration.milliseconds(100)
        var waited = false
        while true {
            do {
                return try await step()
            } catch {
                guard error is StoreUnavailableError || error is StoreTimeoutError else { throw error }
                // The store logs an outage itself, once.
                if !waited { logger.debug("event \(event.id) waits for the store: \(error)", metadata: Self.metadata(event)) }
                waited = true
                if (try? await Task.sleep(for: delay)) == nil { throw error }
                delay = min(delay * 2, .seconds(2))
            }
        }
    }
}
