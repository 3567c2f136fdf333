/// A dry run's work queue: a live daemon's accepted events (`QueuedEvent+Work`) are not a dry
/// run's to claim, renew or remove, since it would print them and they would never be sent;
/// every other kind passes through (a dry-run poller checks the users it claims).
struct DryRunWorkQueue: WorkQueue {
    let base: any WorkQueue

    var pipeline: String { base.pipeline }

    private func passes(_ kind: String) -> Bool { !kind.hasPrefix(QueuedEvent.kinds) }

    func add(_ items: [WorkItem], after delays: [Duration]) async throws {
        let passing = items.indices.filter { passes(items[$0].kind) }
        try await base.add(passing.map { items[$0] }, after: passing.map { delays[$0] })
    }

    func claim(_ kind: String, limit: Int, lease: Duration, grouping: WorkGrouping?) async throws -> [WorkItem] {
        passes(kind) ? try await base.claim(kind, limit: limit, lease: lease, grouping: grouping) : []
    }

    func renew(_ kind: String, keys: Set<String>, lease: Duration) async throws {
        if passes(kind) { try await base.renew(kind, keys: keys, lease: lease) }
    }

    func complete(_ kind: String, keys: Set<String>) async throws {
        if passes(kind) { try await base.complete(kind, keys: keys) }
    }

    func retry(_ kind: String, keys: Set<String>, after delay: Duration) async throws {
        if passes(kind) { try await base.retry(kind, keys: keys, after: delay) }
    }

    func release(_ kind: String, keys: Set<String>) async throws {
        if passes(kind) { try await base.release(kind, keys: keys) }
    }

    func item(_ kind: String, key: String) async throws -> WorkItem? { try await base.item(kind, key: key) }

    /// Counts what the live daemons admitted, and admits nothing itself: a dry run uses up no
    /// one's rate.
    func admit(_ item: WorkItem, limits: [WorkLimit], adding: Bool) async throws -> Bool {
        try await base.admit(item, limits: limits, adding: false)
    }

    /// What the item would open, stored nowhere: a dry run adds to no live daemon's digest.
    func accumulate(_ item: WorkItem, _ combine: @escaping @Sendable (JSON) -> JSON) async throws -> JSON { item.payload }

    /// Nothing: a dry run closes no live daemon's digest.
    func takeAway(_ kind: String, key: String, if accept: @escaping @Sendable (WorkItem) -> Bool) async throws -> WorkItem? { nil }

    /// Nothing: a dry run replaces and cancels no live daemon's send.
    func withdraw(_ kind: String, keysStartingWith prefix: String, if accept: @escaping @Sendable (WorkItem) -> Bool) async throws -> [WorkItem] {
        []
    }

    /// Retention is the live daemon's: a dry run removes nothing.
    func prune(_ kind: String, createdBefore cutoff: Double, limit: Int) async throws -> Int { 0 }

    func keys(_ kind: String) async throws -> [String] { try await base.keys(kind) }

    func remove(_ kind: String, keys: [String]) async throws {
        if passes(kind) { try await base.remove(kind, keys: keys) }
    }

    func take(_ kind: String, keys: Set<String>, lease: Duration) async throws -> Set<String> {
        try await base.take(kind, keys: keys, lease: lease)
    }

    func forgetLapsedTakes(kindsStartingWith prefix: String) async throws -> Int { 0 }
}
