import Foundation

/// Recurring work: a set of keys, each due once per interval across every daemon on the store
/// (a poller's users). Such an item is never completed: a claim holds it for the interval, and
/// the lease's end is when it falls due again, so a daemon that dies after claiming leaves its
/// keys due an interval later, as if it had done them.
extension WorkQueue {
    /// Makes the keys `wanted` gives the recurring items of `kind`: keys not scheduled yet fall
    /// due evenly over the first 80% of the next `interval`, in their order as text (so a first
    /// round ends within the interval, and SQLite stores neighbours together); keys left out
    /// are removed. Returns whether this daemon synced.
    ///
    /// Reads every key of the kind, and asks `wanted` only then: one daemon does it per
    /// `min(interval, 60 s)`, however many share the store (a taken key, left to lapse, tells
    /// the others it was done).
    @discardableResult
    public func schedule(_ kind: String, every interval: Duration, keys wanted: () async throws -> [String]) async throws -> Bool {
        let spacing = min(interval, .seconds(60)) * 0.9
        guard try await !take(WorkItem.scheduleSyncs, keys: [kind], lease: spacing).isEmpty else { return false }
        do {
            let wanted = Set(try await wanted())
            let scheduled = Set(try await keys(kind))
            let new = wanted.subtracting(scheduled).sorted()
            let gone = scheduled.subtracting(wanted)
            if !gone.isEmpty { try await remove(kind, keys: Array(gone)) }
            guard !new.isEmpty else { return true }
            let step = interval * 0.8 / new.count
            let now = Date().timeIntervalSince1970
            // In bounded batches: a first sync of a million users is many statements, not one
            // parameter larger than a database takes.
            for start in stride(from: 0, to: new.count, by: Self.scheduleBatch) {
                let batch = new.indices[start..<min(new.count, start + Self.scheduleBatch)]
                try await add(
                    batch.map { WorkItem(kind: kind, key: new[$0], payload: .object([:]), createdAt: now) },
                    after: batch.map { step * $0 }
                )
            }
            return true
        } catch {
            // Not synced: the next try, here or on another daemon, need not wait a period.
            try? await complete(WorkItem.scheduleSyncs, keys: [kind])
            throw error
        }
    }

    /// At most `limit` keys of `kind` that are due, now this daemon's: each falls due again
    /// `interval` from now, so across every daemon each key is claimed once per interval.
    public func claimRecurring(_ kind: String, every interval: Duration, limit: Int) async throws -> [String] {
        try await claim(kind, limit: limit, lease: interval).map(\.key)
    }

    static var scheduleBatch: Int { 10_000 }
}

extension WorkItem {
    /// A poller's schedule of users to check: recurring work, one kind per source.
    public static func pollKind(source: String) -> String { "poll:" + source }

    /// The kind of the taken keys that mark a recurring kind's schedule as synced, one key per kind.
    public static let scheduleSyncs = "schedule-synced"
}
