/// The store a dry run works on: what people and apps put in (registrations, settings, the
/// answers of idempotent requests) reaches the real store, and what a pipeline would write
/// after sending (deliveries, history, event records, watermarks, queued events, pruning) goes
/// nowhere. The runtime writes as it always does, and nothing it would have sent counts as sent.
///
/// A dry run claims no queued event: a daemon started with `--dry-run` on a live daemon's state
/// would otherwise print what that daemon left unsent, and remove it from the queue.
struct DryRunStore: Store {
    let base: any Store

    func ping() async throws { try await base.ping() }
    func close() async throws { try await base.close() }

    // Registrations and settings: input, kept.
    func register(_ token: DeviceToken, pipeline: String, environment: String?, replace: Bool, keepingAtMost: Int?) async throws {
        try await base.register(token, pipeline: pipeline, environment: environment, replace: replace, keepingAtMost: keepingAtMost)
    }
    func tokens(pipeline: String, user: String?, kind: String) async throws -> [DeviceToken] {
        try await base.tokens(pipeline: pipeline, user: user, kind: kind)
    }
    func tokens(pipeline: String, kind: String, users: ClosedRange<String>) async throws -> [DeviceToken] {
        try await base.tokens(pipeline: pipeline, kind: kind, users: users)
    }
    func users(pipeline: String) async throws -> [String] { try await base.users(pipeline: pipeline) }
    func isRegistered(pipeline: String, user: String) async throws -> Bool { try await base.isRegistered(pipeline: pipeline, user: user) }
    func users(pipeline: String, after: String?, limit: Int) async throws -> [String] {
        try await base.users(pipeline: pipeline, after: after, limit: limit)
    }
    func users(pipeline: String, token: String, kind: String?) async throws -> [String] {
        try await base.users(pipeline: pipeline, token: token, kind: kind)
    }
    func removeToken(pipeline: String, kind: String, token: String, unlessUpdatedAfter: Double?) async throws -> Bool {
        try await base.removeToken(pipeline: pipeline, kind: kind, token: token, unlessUpdatedAfter: unlessUpdatedAfter)
    }
    func setting(pipeline: String, user: String, key: String) async throws -> JSON? { try await base.setting(pipeline: pipeline, user: user, key: key) }
    func settings(pipeline: String, user: String) async throws -> [String: JSON] { try await base.settings(pipeline: pipeline, user: user) }
    func setSettings(_ values: [String: JSON], pipeline: String, user: String) async throws {
        try await base.setSettings(values, pipeline: pipeline, user: user)
    }
    func warmTokens(pipeline: String, users: [String]) async throws { try await base.warmTokens(pipeline: pipeline, users: users) }

    // What was sent: nothing was.
    func recordOutcome(deliveries: [DeliveryRecord], history: [HistoryEntry], state: [StateWrite], events: [EventRecord],
                       webhooks: [WebhookOutcome], pipeline: String) async throws {}
    func history(pipeline: String, user: String, limit: Int, before: Int64?) async throws -> [HistoryEntry] {
        try await base.history(pipeline: pipeline, user: user, limit: limit, before: before)
    }
    func lastDelivery(pipeline: String, user: String) async throws -> DeliveryRecord? { try await base.lastDelivery(pipeline: pipeline, user: user) }

    /// None: a dry run keeps no record, and resumes no broadcast from a live daemon's.
    func eventRecords(eventID: String, pipeline: String?) async throws -> (records: [EventRecord], queued: [QueuedEvent]) { ([], []) }
    func deadLetters(pipeline: String?, since: Double?, limit: Int) async throws -> [EventRecord] {
        try await base.deadLetters(pipeline: pipeline, since: since, limit: limit)
    }
    func deadLetterCounts() async throws -> [String: Int] { try await base.deadLetterCounts() }
    func replayDeadLetter(_ replay: QueuedEvent) async throws -> Bool { false }
    func dropDeadLetter(pipeline: String, eventID: String) async throws -> Bool { false }

    // The queue: an accepted event is processed at once and kept nowhere; its request's answer is.
    func enqueue(_ event: QueuedEvent) async throws {
        if let answer = event.answer { try await base.recordIdempotentAnswer(answer) }
    }
    func dequeue(pipeline: String, source: String, key: String) async throws {}
    func queuedEventCounts() async throws -> [QueuedEventCount] { [] }
    func renameSource(pipeline: String, from: String, to: String, lease: Double) async throws -> Int { 0 }

    func claimIdempotencyKey(_ key: IdempotencyKey, fingerprint: String, holder: String, hold: Double, ttl: Double) async throws -> IdempotencyClaim {
        try await base.claimIdempotencyKey(key, fingerprint: fingerprint, holder: holder, hold: hold, ttl: ttl)
    }
    func recordIdempotentAnswer(_ answer: IdempotentAnswer) async throws { try await base.recordIdempotentAnswer(answer) }
    func releaseIdempotencyKey(_ key: IdempotencyKey, holder: String) async throws { try await base.releaseIdempotencyKey(key, holder: holder) }
    func withdrawIdempotencyKey(_ key: IdempotencyKey) async throws { try await base.withdrawIdempotencyKey(key) }

    /// Shared work (a poller's schedule) goes on as it would: which users are due is no output.
    func work(pipeline: String) -> any WorkQueue { DryRunWorkQueue(base: base.work(pipeline: pipeline)) }

    // Watermarks are read, never moved; holds are the stages' own (a dry run's filter takes none).
    func state(pipeline: String, stage: String, key: String) async throws -> JSON? { try await base.state(pipeline: pipeline, stage: stage, key: key) }
    func states(pipeline: String, stage: String, keys: [String]) async throws -> [String: JSON] {
        try await base.states(pipeline: pipeline, stage: stage, keys: keys)
    }
    func setState(_ writes: [StateWrite], pipeline: String) async throws {}
    func hold(keys: Set<String>, pipeline: String, stage: String, lease: Double) async throws -> Set<String> {
        try await base.hold(keys: keys, pipeline: pipeline, stage: stage, lease: lease)
    }
    func release(keys: Set<String>, pipeline: String, stage: String) async throws { try await base.release(keys: keys, pipeline: pipeline, stage: stage) }
    func renewHolds(keys: Set<String>, pipeline: String, stage: String, lease: Double) async throws {
        try await base.renewHolds(keys: keys, pipeline: pipeline, stage: stage, lease: lease)
    }

    // Retention is the live daemon's: a dry run removes nothing.
    func pruneDeliveries(pipeline: String, createdBefore cutoff: Double, limit: Int) async throws -> Int { 0 }
    func pruneDeliveries(pipeline: String, keepingPerUser keep: Int, usersAfter after: String?, users: Int) async throws
        -> (deleted: Int, lastUser: String?) { (0, nil) }
    func pruneStates(pipeline: String, stage: String, unchangedSince cutoff: Double, limit: Int) async throws -> Int { 0 }
    func pruneLapsedHolds(pipeline: String) async throws -> Int { 0 }
    func pruneEventRecords(pipeline: String, unchangedSince cutoff: Double, limit: Int) async throws -> Int { 0 }
    func pruneWebhookOutcomes(pipeline: String, createdBefore cutoff: Double, limit: Int) async throws -> Int { 0 }
    func pruneExpiredIdempotencyKeys(pipeline: String, limit: Int) async throws -> Int { 0 }
}
