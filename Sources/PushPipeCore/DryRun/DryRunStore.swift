/// The store a dry run works on: what people and apps put in (registrations, settings, the
/// answers of idempotent requests) reaches the real store, and what a pipeline would write
/// after sending (deliveries, history, event records, watermarks, queued events, pruning) goes
/// nowhere. The runtime writes as it always does, and nothing it would have sent counts as sent.
///
/// A dry run claims no queued event: a daemon started with `--dry-run` on a live daemon's state
/// would otherwise print what that daemon left unsent, and remove it from the queue.
struct DryRunStore: Store {
    let base: any Store

    func pipeline(_ name: String) -> any PipelineStore { DryRunPipelineStore(base: base.pipeline(name)) }
    func ping() async throws { try await base.ping() }
    func close() async throws { try await base.close() }

    /// None: a dry run keeps no record, and resumes no broadcast from a live daemon's.
    func eventRecords(eventID: String, pipeline: String?) async throws -> (records: [EventRecord], queued: [QueuedEvent]) { ([], []) }
    func deadLetters(pipeline: String?, since: Double?, limit: Int) async throws -> [EventRecord] {
        try await base.deadLetters(pipeline: pipeline, since: since, limit: limit)
    }
    func deadLetterCounts() async throws -> [String: Int] { try await base.deadLetterCounts() }
    func replayDeadLetter(_ replay: QueuedEvent) async throws -> Bool { false }

    // The queue: an accepted event is processed at once and kept nowhere; its request's answer is.
    func enqueue(_ event: QueuedEvent) async throws {
        if let answer = event.answer { try await base.recordIdempotentAnswer(answer) }
    }
    func queuedEventCounts() async throws -> [QueuedEventCount] { [] }

    func claimIdempotencyKey(
        _ key: IdempotencyKey,
        fingerprint: String,
        holder: String,
        hold: Duration,
        ttl: Duration
    ) async throws -> IdempotencyClaim {
        try await base.claimIdempotencyKey(key, fingerprint: fingerprint, holder: holder, hold: hold, ttl: ttl)
    }
    func recordIdempotentAnswer(_ answer: IdempotentAnswer) async throws { try await base.recordIdempotentAnswer(answer) }
    func releaseIdempotencyKey(_ key: IdempotencyKey, holder: String) async throws { try await base.releaseIdempotencyKey(key, holder: holder) }
    func withdrawIdempotencyKey(_ key: IdempotencyKey) async throws { try await base.withdrawIdempotencyKey(key) }
}
