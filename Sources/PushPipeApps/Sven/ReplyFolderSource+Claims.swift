import Foundation
import PushPipeCore
import PushPipeStages

#if canImport(Glibc)
import Glibc
#endif

/// Claims: how several daemons watching one folder send each reply once.
///
/// A claim folder's owner is alive while it keeps touching the folder. Whether it still does
/// is judged by each watcher on its own monotonic clock, from whether the folder's timestamp
/// changed, never by comparing a timestamp with the watcher's wall clock: `rename()` keeps a
/// file's modification time, so a reply's age says nothing about its claim, and daemons on
/// several machines, or one with a drifting clock, do not agree on the time.
extension ReplyFolderSource {
    /// This process's claim folder; the dot keeps scans and inotify of the folder out of it.
    var claimDirectory: String { "\(directory)/.claimed/\(QueuedEvent.thisProcess)" }

    /// Renames the file into this process's claim folder; false when another daemon was first.
    func claim(_ name: String) -> Bool {
        if rename("\(directory)/\(name)", "\(claimDirectory)/\(name)") == 0 { return true }
        // Another daemon removes claim folders it found abandoned and empty: make ours again.
        guard errno == ENOENT, FileManager.default.fileExists(atPath: "\(directory)/\(name)") else { return false }
        try? FileManager.default.createDirectory(atPath: claimDirectory, withIntermediateDirectories: true)
        return rename("\(directory)/\(name)", "\(claimDirectory)/\(name)") == 0
    }

    /// Every third of the lease until the pipeline drained (a long-running stage, so it goes on
    /// while the last replies are delivered): touches this process's claim folder, and puts
    /// back into the folder the files of claim folders whose timestamp did not change for a
    /// whole lease. The folder's watchers see them arrive (a rename) and one claims them.
    func keepClaims(context: StageContext) async {
        let lease = configuration.claimLease
        var owners = ClaimFolderOwners()
        while !Task.isCancelled {
            // A folder another daemon removed (empty and judged abandoned) comes back with the next claim.
            try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: claimDirectory)
            let claims = "\(directory)/.claimed"
            let others = ((try? FileManager.default.contentsOfDirectory(atPath: claims)) ?? []).filter { $0 != QueuedEvent.thisProcess }
            for owner in owners.abandoned(among: others, folder: { Self.timestamp(of: "\(claims)/\($0)") }, after: lease) {
                returnClaims(of: owner, in: claims, context: context)
            }
            retryFailed(context: context)
            do { try await Task.sleep(for: lease / 3) } catch { return }
        }
    }

    /// Puts the failed replies whose wait is over back into the folder: its watchers see them
    /// arrive, and one claims and sends them.
    private func retryFailed(context: StageContext) {
        for name in failedReplies.due() where !FileManager.default.fileExists(atPath: "\(directory)/\(name)") {
            if rename("\(claimDirectory)/\(name)", "\(directory)/\(name)") == 0 {
                context.logger.notice("reply \(name) is back in \(directory) to be sent again")
            }
        }
    }

    /// Moves an abandoned claim folder's files back into the folder, then removes it if empty.
    private func returnClaims(of owner: String, in claims: String, context: StageContext) {
        let folder = "\(claims)/\(owner)"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var returned = 0
        for name in names where !FileManager.default.fileExists(atPath: "\(directory)/\(name)") {
            if rename("\(folder)/\(name)", "\(directory)/\(name)") == 0 { returned += 1 }
        }
        if returned > 0 { context.logger.notice("\(returned) replies claimed by a daemon that stopped are back in \(directory)") }
        if names.count == returned { rmdir(folder) }
    }

    /// A folder's modification time, to the nanosecond: only compared with itself.
    static func timestamp(of path: String) -> timespec? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return status.st_mtim
    }
}

/// What one watcher saw of the other claim folders: each one's last timestamp and when, on
/// this process's monotonic clock, it last changed.
struct ClaimFolderOwners {
    private var seen: [String: (stamp: timespec, since: ContinuousClock.Instant)] = [:]

    /// The owners whose folder has not changed for `lease`, as far as this watcher saw: a folder
    /// seen for the first time gets a whole lease from now.
    mutating func abandoned(
        among owners: [String],
        folder timestamp: (String) -> timespec?,
        after lease: Duration,
        now: ContinuousClock.Instant = .now
    ) -> [String] {
        var abandoned: [String] = []
        var current: [String: (stamp: timespec, since: ContinuousClock.Instant)] = [:]
        for owner in owners {
            guard let stamp = timestamp(owner) else { continue }
            if let last = seen[owner], last.stamp.tv_sec == stamp.tv_sec, last.stamp.tv_nsec == stamp.tv_nsec {
                current[owner] = last
                if now - last.since >= lease { abandoned.append(owner) }
            } else {
                current[owner] = (stamp, now)
            }
        }
        seen = current
        return abandoned
    }
}
