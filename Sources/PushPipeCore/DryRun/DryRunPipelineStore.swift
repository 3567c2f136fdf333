/// A pipeline's part of the dry run's store (`DryRunStore`): input is kept, output goes nowhere.
struct DryRunPipelineStore: PipelineStore {
    let base: any PipelineStore

    var name: String { base.name }
    /// Shared work (a poller's schedule) goes on as it would: which users are due is no output.
    var work: any WorkQueue { DryRunWorkQueue(base: base.work) }

    // Registrations and settings: input, kept.
    func register(_ token: DeviceToken, environment: String?, replace: Bool, keepingAtMost: Int?) async throws {
        try await base.register(token, environment: environment, replace: replace, keepingAtMost: keepingAtMost)
    }
    func tokens(user: String?, kind: String) async throws -> [DeviceToken] { try await base.tokens(user: user, kind: kind) }
    func tokens(kind: String, users: ClosedRange<String>) async throws -> [DeviceToken] { try await base.tokens(kind: kind, users: users) }
    func users() async throws -> [String] { try await base.users() }
    func isRegistered(user: String) async throws -> Bool { try await base.isRegistered(user: user) }
    func users(after: String?, limit: Int) async throws -> [String] { try await base.users(after: after, limit: limit) }
    func users(token: String, kind: String?) async throws -> [String] { try await base.users(token: token, kind: kind) }
    func removeToken(kind: String, token: String, unlessUpdatedAfter: Double?) async throws -> Bool {
        try await base.removeToken(kind: kind, token: token, unlessUpdatedAfter: unlessUpdatedAfter)
    }
    func setting(user: String, key: String) async throws -> JSON? { try await base.setting(user: user, key: key) }
    func settings(user: String) async throws -> [String: JSON] { try await base.settings(user: user) }
    func settings(of users: [String]) async throws -> [[String: JSON]] { try await base.settings(of: users) }
    func setSettings(_ values: [String: JSON], user: String) async throws { try await base.setSettings(values, user: user) }
    func settings(users: ClosedRange<String>, keys: [String]) async throws -> [String: [String: JSON]] {
        try await base.settings(users: users, keys: keys)
    }
    func settingTexts(keys: [String], limit: Int) async throws -> Set<String> { try await base.settingTexts(keys: keys, limit: limit) }
    func warmTokens(users: [String]) async throws { try await base.warmTokens(users: users) }

    // What was sent: nothing was.
    func recordOutcome(
        deliveries: [DeliveryRow],
        state: [StateWrite],
        events: [EventRecord],
        webhooks: [WebhookOutcome],
        finishing: [Event.QueueItem],
        progress: [WorkItem]
    ) async throws {}
    func history(user: String, limit: Int, before: Int64?) async throws -> [HistoryEntry] {
        try await base.history(user: user, limit: limit, before: before)
    }
    func lastDelivery(user: String) async throws -> DeliveryRow? { try await base.lastDelivery(user: user) }
    func dropDeadLetter(eventID: String) async throws -> Bool { false }

    func dequeue(source: String, key: String) async throws {}
    func renameSource(from: String, to: String, lease: Duration) async throws -> Int { 0 }

    // Watermarks are read, never moved; holds are the stages' own (a dry run's filter takes none).
    func states(stage: String, keys: [String]) async throws -> [String: JSON] { try await base.states(stage: stage, keys: keys) }
    func setState(_ writes: [StateWrite]) async throws {}
    func hold(keys: Set<String>, stage: String, lease: Duration) async throws -> Set<String> {
        try await base.hold(keys: keys, stage: stage, lease: lease)
    }
    func release(keys: Set<String>, stage: String) async throws { try await base.release(keys: keys, stage: stage) }
    func renewHolds(keys: Set<String>, stage: String, lease: Duration) async throws {
        try await base.renewHolds(keys: keys, stage: stage, lease: lease)
    }

    // Retention is the live daemon's: a dry run removes nothing.
    func pruneDeliveries(createdBefore cutoff: Double, limit: Int) async throws -> Int { 0 }
    func pruneDeliveries(keepingPerUser keep: Int, usersAfter after: String?, users: Int) async throws -> (deleted: Int, lastUser: String?) {
        (0, nil)
    }
    func pruneStates(stage: String, unchangedSince cutoff: Double, limit: Int) async throws -> Int { 0 }
    func pruneEventRecords(unchangedSince cutoff: Double, limit: Int) async throws -> Int { 0 }
    func pruneExpiredIdempotencyKeys(limit: Int) async throws -> Int { 0 }
}
