/// A pipeline's durable work (`WorkItem`s) in its store, leased to the daemon doing it. An
/// item is due from a time on the store's clock; a claim takes due items nobody holds (or
/// whose holder's lease ran out: it died) and holds them for a lease, which is also when they
/// fall due again; the holder renews, completes, retries later or releases them. On PostgreSQL daemons claiming at once split
/// the due items (`FOR UPDATE SKIP LOCKED`); SQLite's single writer does the same by order.
///
/// An item is named by its kind and key. Operations on keys act only on items this process was
/// the last to claim (`LeaseOwner`): a daemon whose lease ran out, and whose items another
/// daemon took, changes nothing of theirs.
public protocol WorkQueue: Sendable {
    var pipeline: String { get }
    /// Adds items, each due its `delays` entry from now on the store's clock. An item
    /// whose key still waits in its kind is not added again.
    func add(_ items: [WorkItem], after delays: [Duration]) async throws
    /// At most `limit` due items of `kind` nobody holds, oldest due first, now this process's
    /// for `lease`; returned in the order they were added. With `grouping`, items not
    /// yet in a group get the groups it gives them, and every chosen item's group comes whole.
    func claim(_ kind: String, limit: Int, lease: Duration, grouping: WorkGrouping?) async throws -> [WorkItem]
    /// Extends this process's leases of the items or taken keys of `kind` under `keys` to
    /// `lease` from now. On a shared database it also tells other daemons' claims that
    /// this kind's holders are renewing: after a gap in every holder's renewals (the database
    /// was away), claims of lapsed items wait until the holders have renewed again, instead of
    /// taking back what is still being worked on. So a holder renews even with no key.
    func renew(_ kind: String, keys: Set<String>, lease: Duration) async throws
    /// Done: this process's items (or taken keys) of `kind` under `keys` are gone.
    func complete(_ kind: String, keys: Set<String>) async throws
    /// Not done: due again after `delay`, their attempts counted, held by nobody.
    func retry(_ kind: String, keys: Set<String>, after delay: Duration) async throws
    /// Let go of without an attempt: due at once, for whichever daemon claims them next.
    func release(_ kind: String, keys: Set<String>) async throws
    /// The item of `kind` under `key`, held or not: nil when there is none.
    func item(_ kind: String, key: String) async throws -> WorkItem?
    /// Removes at most `limit` items of `kind` added before `cutoff` (UNIX seconds), held or
    /// not: work that waited longer than anyone waits. Returns how many.
    func prune(_ kind: String, createdBefore cutoff: Double, limit: Int) async throws -> Int
    /// The keys of `kind`'s items, held or not, in no particular order.
    func keys(_ kind: String) async throws -> [String]
    /// Removes the items of `kind` under `keys`, whoever holds them (work nobody wants any more).
    func remove(_ kind: String, keys: [String]) async throws
    /// Adds `item` (never due: a mark that something happened) only if, among its kind's items
    /// in its `group` (a user, a throttle's key), fewer than each limit's `count` were added
    /// after its `since` (UNIX seconds, `createdAt`); returns whether it was added. Atomic
    /// across daemons: a rate every daemon of a group shares (a throttle, a frequency cap) is
    /// never exceeded by daemons admitting at once. An item whose key is there already was
    /// admitted before (the same event again, back from a wait): true, and nothing is counted.
    /// Not `adding`: only whether it would be.
    func admit(_ item: WorkItem, limits: [WorkLimit], adding: Bool) async throws -> Bool
    /// Adds `item` (never due), or, when its kind holds an item under its key, replaces that
    /// item's payload with `combine` of it; in one step for every daemon, so what daemons
    /// combine at once is all kept (a digest's items). Returns the payload stored.
    func accumulate(_ item: WorkItem, _ combine: @escaping @Sendable (JSON) -> JSON) async throws -> JSON
    /// Removes the item of `kind` under `key`, whoever holds it, if it is there and `accept`s
    /// it, and returns it: of daemons taking it at once, one gets it (a digest closes once).
    func takeAway(_ kind: String, key: String, if accept: @escaping @Sendable (WorkItem) -> Bool) async throws -> WorkItem?
    /// Removes the items of `kind` whose keys start with `prefix` (ending in a newline) that no
    /// daemon holds (one that does is on its way) and that `accept` takes, and returns them: a
    /// pending send replaced or cancelled.
    func withdraw(_ kind: String, keysStartingWith prefix: String, if accept: @escaping @Sendable (WorkItem) -> Bool) async throws -> [WorkItem]

    /// Takes the keys of `kind` nobody holds (or whose holder's lease ran out: it died) for this
    /// process, for `lease`; returns those taken. A lock per key that every daemon on
    /// the store respects, for work done outside the queue (a stage's hold on an item whose
    /// notification is on its way). Taken keys are never claimed as work; `complete` lets go of them.
    func take(_ kind: String, keys: Set<String>, lease: Duration) async throws -> Set<String>
    /// Removes taken keys whose lease ran out, of the kinds starting with `prefix` (their
    /// daemons died holding them: a lapsed key is free to take, so this changes nothing but the
    /// table's size). Returns how many.
    func forgetLapsedTakes(kindsStartingWith prefix: String) async throws -> Int
}

/// At most `count` items added after `since` (UNIX seconds): one rule of `WorkQueue.admit`.
public struct WorkLimit: Sendable, Equatable {
    public var count: Int
    public var since: Double

    public init(count: Int, since: Double) {
        self.count = count
        self.since = since
    }
}

extension WorkQueue {
    /// The end of the range of keys that start with `prefix`, which ends in a newline: the
    /// newline's successor, so a lookup reads an index range.
    public static func keysEnd(startingWith prefix: String) -> String {
        precondition(prefix.hasSuffix("\n"), "a prefix of keys ends in a newline")
        return String(prefix.dropLast()) + "\u{0B}"
    }

    public func admit(_ item: WorkItem, limits: [WorkLimit]) async throws -> Bool {
        try await admit(item, limits: limits, adding: true)
    }
}

/// Puts items that are in no group yet into groups: each group's name and its items' ids.
public typealias WorkGrouping = @Sendable ([WorkItem]) -> [(group: String, ids: [Int64])]

extension WorkQueue {
    public func add(_ items: [WorkItem], after delay: Duration = .zero) async throws {
        try await add(items, after: Array(repeating: delay, count: items.count))
    }

    public func claim(_ kind: String, limit: Int, lease: Duration) async throws -> [WorkItem] {
        try await claim(kind, limit: limit, lease: lease, grouping: nil)
    }
}
