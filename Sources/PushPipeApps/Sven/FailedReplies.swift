import Foundation
import Synchronization

/// Replies whose delivery failed, kept in this process's claim folder until their retry: then
/// they go back into the folder, where a daemon (this one or another) claims and sends them
/// again. A failure is often the moment's (the store away, a provider refusing for a while),
/// and a reply left claimed until the daemon's next start could wait for days. The wait
/// doubles per failure of the same reply, from the claim lease up to ten minutes.
final class FailedReplies: Sendable {
    private struct Entry {
        var failures: Int
        var retryAt: ContinuousClock.Instant
    }

    private let entries = Mutex<[String: Entry]>([:])
    static let longestWait: Duration = .seconds(600)

    /// Records a failure; returns how long the reply waits.
    @discardableResult
    func failed(_ name: String, firstWait: Duration, now: ContinuousClock.Instant = .now) -> Duration {
        entries.withLock { entries in
            let failures = (entries[name]?.failures ?? 0) + 1
            let wait = min(firstWait * (1 << min(failures - 1, 16)), Self.longestWait)
            entries[name] = Entry(failures: failures, retryAt: now + wait)
            return wait
        }
    }

    /// A reply that was delivered needs no memory of its failures.
    func delivered(_ name: String) {
        entries.withLock { _ = $0.removeValue(forKey: name) }
    }

    /// The replies whose wait is over, taken out of the schedule (their failure counts stay).
    func due(now: ContinuousClock.Instant = .now) -> [String] {
        entries.withLock { entries in
            let due = entries.filter { $0.value.retryAt <= now }.map(\.key)
            for name in due { entries[name]?.retryAt = .now + .seconds(86400 * 365) }
            return due.sorted()
        }
    }
}
