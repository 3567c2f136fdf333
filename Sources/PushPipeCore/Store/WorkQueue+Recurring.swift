import Foundation

/// Recurring work: a set of keys, each due once per interval across every daemon on the store
/// (a poller's users). Such an item is never completed: a claim holds it for the interval, and
/// the lease's end is when it falls due again, so a daemon that dies after claiming leaves its
/// keys due an interval later, as if it had done them.
extension WorkQueue {
    /// Makes `keys` the recurring items of `kind`: keys not scheduled yet fall due evenly over
    /// the first 80% of the next `interval`, in their order as text (so a first round ends
    /// within the interval, and SQLite stores neighbours together); keys left out are removed.
    ///
    /// Reads every key of the kind: one daemon does it per `min(interval, 60 s)`, however many
    /// share the store (a taken key, left to lapse, tells the others it was done).
    public func schedule(_ kind: String, keys wanted: some Sequence<String>, every interval: Double) async throws {
        let spacing = min(interval, 60) * 0.9
        guard try await !take(Self.scheduleSyncs, keys: [kind], lease: spacing).isEmpty else { return }
        do {
            let wanted = Set(wanted)
            let scheduled = Set(try await keys(kind))
            let new = wanted.subtracting(scheduled).sorted()
            let gone = scheduled.subtracting(wanted)
            if !gone.isEmpty { try await remove(kind, keys: Array(gone)) }
            guard !new.isEmpty else { return }
            let step = interval * 0.8 / Double(new.count)
            let now = Date().timeIntervalSince1970
            let items = new.map { WorkItem(kind: kind, key: $0, payload: .object([:]), createdAt: now) }
            try await add(items, after: new.indices.map { Double($0) * step })
        } catch {
            // Not synced: the next try, here or on another daemon, need not wait a period.
            try? await untake(Self.scheduleSyncs, keys: [kind])
            throw error
        }
    }

    /// At most `limit` keys of `kind` that are due, now this daemon's: each falls due again
    /// `interval` from now, so across every daemon each key is claimed once per interval.
    public func claimRecurring(_ kind: String, every interval: Double, limit: Int) async throws -> [String] {
        try await claim(kind, limit: limit, lease: interval).map(\.key)
    }

    /// The taken keys that mark a recurring kind's schedule as synced, one per kind.
    static var scheduleSyncs: String { "schedule-synced" }
}

extension WorkItem {
    /// A poller's schedule of users to check: recurring work, one kind per source.
    public static func pollKind(source: String) -> String { "poll:" + source }
}
