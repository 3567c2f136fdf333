import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The daemon's claim on a SQLite state for its whole life: an exclusive `flock` on a lock file
/// beside the database (`PATH.lock`), holding the daemon's pid.
///
/// A SQLite state has one daemon: it takes over every queued event another process left in it
/// (`SQLiteStore.claimQueuedEvents`), so a second daemon on the file would send what the first
/// is sending. Not a lock on the database file itself: SQLite's own POSIX locks are there, and
/// on a network file system `flock` becomes one of them. The kernel lets go of it when the
/// process ends, however it ends, so no stale lock outlives a killed daemon. Commands that only
/// read (or snapshot) the state, and `dead-letters replay`, which a running daemon is meant to
/// pick up, do not take it.
public final class SQLiteStateLock: Sendable {
    private let descriptor: Int32
    private let released = Atomic(false)

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Takes the lock of the database at `path` (creating its folder 0700 and the lock file
    /// 0600 as needed), or throws `StateLockError` naming the process that holds it.
    public static func acquire(forDatabaseAt databasePath: String) throws -> SQLiteStateLock {
        let directory = (databasePath as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let path = databasePath + ".lock"
        // O_CLOEXEC: a plugin the daemon starts must not keep the state locked after the daemon is gone.
        let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StateLockError(code: .unavailable, database: databasePath, lockFile: path, reason: String(cString: strerror(errno)))
        }
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let failure = errno
            if failure == EINTR { continue }
            let holder = failure == EWOULDBLOCK ? holder(of: descriptor) : nil
            _ = closeDescriptor(descriptor)
            if failure == EWOULDBLOCK {
                throw StateLockError(code: .inUse, database: databasePath, lockFile: path, holder: holder)
            }
            throw StateLockError(code: .unavailable, database: databasePath, lockFile: path, reason: String(cString: strerror(failure)))
        }
        // Told to a daemon that finds the state taken. Written over an earlier holder's line, then
        // cut to it: the first line names this process at every moment after the write.
        let pid = Array("\(getpid())\n".utf8)
        _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        _ = ftruncate(descriptor, off_t(pid.count))
        return SQLiteStateLock(descriptor: descriptor)
    }

    /// The pid the holder wrote into the lock file. It writes it just after taking the lock, so
    /// a new, empty file is read again for a moment before the holder is called unknown.
    private static func holder(of descriptor: Int32) -> pid_t? {
        for _ in 0..<50 {
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
            let firstLine = String(decoding: buffer[..<max(count, 0)], as: UTF8.self).split(separator: "\n").first
            if let firstLine, let pid = pid_t(firstLine.trimmingCharacters(in: .whitespaces)) {
                return pid
            }
            usleep(10_000)
        }
        return nil
    }

    /// Lets go of the lock (the daemon stopped and closed its store). The lock file stays: a
    /// file removed while another process waits to open it would split the lock in two.
    public func release() {
        guard !released.exchange(true, ordering: .relaxed) else { return }
        _ = Self.closeDescriptor(descriptor)
    }

    private static func closeDescriptor(_ descriptor: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.close(descriptor)
        #else
        Darwin.close(descriptor)
        #endif
    }
}
