#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A SQLite state a daemon cannot lock: another daemon runs on it (`state_in_use`), or the lock
/// file cannot be opened or locked (`state_lock_failed`).
public struct StateLockError: Error, CustomStringConvertible {
    public enum Code: String, Sendable {
        case inUse = "state_in_use"
        case unavailable = "state_lock_failed"
    }

    public var code: Code
    public var database: String
    public var lockFile: String
    /// The pid of the process holding the lock, when it could be read.
    public var holder: pid_t?
    public var reason: String?

    public var description: String {
        switch code {
        case .inUse:
            let who = holder.map { "another pushpipe daemon (pid \($0))" } ?? "another pushpipe daemon (pid unknown)"
            return "the state sqlite:\(database) is in use by \(who), which holds \(lockFile) [\(code.rawValue)]. "
                + "One daemon runs on a SQLite state: stop that one first, or give this one its own --state "
                + "(several daemons share a PostgreSQL --store)"
        case .unavailable:
            return "cannot lock the state sqlite:\(database) (\(lockFile): \(reason ?? "unknown error")) [\(code.rawValue)]"
        }
    }
}
