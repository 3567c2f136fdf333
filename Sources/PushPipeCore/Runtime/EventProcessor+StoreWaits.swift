extension EventProcessor {
    /// Runs a stage's step again for as long as it fails only because the store is away (an
    /// outage, a connection the server cut): an accepted event must not fail for good for that,
    /// since its source then forgets it as processed. Meanwhile the event holds its place in the
    /// pipeline, as an outcome being recorded does; a stop past the drain timeout gives up with
    /// the store's error, and the source keeps the event.
    func waitingForTheStore<Result>(_ event: Event, _ step: () async throws -> Result) async throws -> Result {
        try await retrying(
            while: StoreAvailability.meansAway,
            failed: { error, failures in
                // The store logs an outage itself, once.
                if failures == 1 { logger.debug("event \(event.id) waits for the store: \(error)", metadata: Self.metadata(event)) }
            },
            step
        )
    }

    /// Runs `step` until it succeeds, 100 ms apart at first, doubling up to 2 s, while
    /// `retries` says its error is worth another try; `failed` hears of each failure and how
    /// many there were. Throws the last error otherwise, or once the task is cancelled. A
    /// refusal of the data (`StoreDataError`) is never worth one: the same write fails the same
    /// way, and an outcome retried for ever held its event and its worker for good.
    func retrying<Result>(
        while retries: (any Error) -> Bool,
        failed: (any Error, Int) -> Void,
        _ step: () async throws -> Result
    ) async throws -> Result {
        var delay = Duration.milliseconds(100)
        var failures = 0
        while true {
            do {
                return try await step()
            } catch {
                guard !(error is StoreDataError), retries(error) else { throw error }
                failures += 1
                failed(error, failures)
                if (try? await Task.sleep(for: delay)) == nil { throw error }
                delay = min(delay * 2, .seconds(2))
            }
        }
    }
}
