import Synchronization

/// When a provider is down or a credential is wrong, every notification fails the same way
/// and a log line per failure buries everything else (a wrong CA file meant four lines per
/// notification, hundreds of thousands in a minute). The first message of a kind is logged at
/// once; the next ones within `window` are only counted, and the first one logged after the
/// window says how many it stands for. Without a window a kind is logged once (configuration
/// errors: loudly once per pipeline, not once per event).
final class RepeatedMessages: Sendable {
    private struct Entry {
        var loggedAt: ContinuousClock.Instant
        var suppressed: Int
    }

    private let entries = Mutex([String: Entry]())
    /// `nil`: once, for as long as the kind is remembered.
    let window: Duration?
    /// Kinds remembered at most; reasons carrying unique details (a payload's size) must not
    /// grow the table for the daemon's lifetime. Past it they are logged once more.
    static let capacity = 1000

    init(window: Duration?) {
        self.window = window
    }

    /// `nil`: stay quiet. Otherwise log now, mentioning the returned number of messages of
    /// this kind left out since the last one logged.
    func admit(_ kind: String, at now: ContinuousClock.Instant = .now) -> Int? {
        entries.withLock { entries in
            if var entry = entries[kind], window.map({ now - entry.loggedAt < $0 }) ?? true {
                entry.suppressed += 1
                entries[kind] = entry
                return nil
            }
            if entries.count >= Self.capacity { entries.removeAll() }
            let suppressed = entries[kind]?.suppressed ?? 0
            entries[kind] = Entry(loggedAt: now, suppressed: 0)
            return suppressed
        }
    }

    /// The suffix for a message that stands for `suppressed` others.
    func summary(_ suppressed: Int) -> String {
        guard suppressed > 0, let window else { return "" }
        return " (and \(suppressed) more like it in the last \(window.components.seconds) s)"
    }
}
