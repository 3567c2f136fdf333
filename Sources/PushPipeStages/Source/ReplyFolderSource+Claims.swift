import Foundation
import PushPipe
#if canImport(Glibc)
import Glibc
#endif

/// Claims: how several daemons watching one folder send each reply once.
extension ReplyFolderSource {
    /// This process's claim folder; the dot keeps scans and inotify of the folder out of it.
    var claimDirectory: String { "\(directory)/.claimed/\(QueuedEvent.thisProcess)" }

    /// Renames the file into this process's claim folder; false when another daemon was first.
    func claim(_ name: String) -> Bool {
        if rename("\(directory)/\(name)", "\(claimDirectory)/\(name)") == 0 { return true }
        // Another daemon removes claim folders it finds empty and untouched: make ours again.
        guard errno == ENOENT, FileManager.default.fileExists(atPath: "\(directory)/\(name)") else { return false }
        try? FileManager.default.createDirectory(atPath: claimDirectory, withIntermediateDirectories: true)
        return rename("\(directory)/\(name)", "\(claimDirectory)/\(name)") == 0
    }

    /// Every third of the lease: touches this process's claimed files (in flight, or failed
    /// here), and puts back into the folder the files of claim folders nobody touched for a
    /// whole lease. The folder's watchers see them arrive (a rename) and one claims them.
    func keepClaims(context: StageContext) async {
        let lease = configuration.claimLease
        let fileManager = FileManager.default
        while !Task.isCancelled {
            let now = Date()
            for name in (try? fileManager.contentsOfDirectory(atPath: claimDirectory)) ?? [] {
                try? fileManager.setAttributes([.modificationDate: now], ofItemAtPath: "\(claimDirectory)/\(name)")
            }
            let claims = "\(directory)/.claimed"
            for owner in (try? fileManager.contentsOfDirectory(atPath: claims)) ?? [] where owner != QueuedEvent.thisProcess {
                let folder = "\(claims)/\(owner)"
                let names = (try? fileManager.contentsOfDirectory(atPath: folder)) ?? []
                var returned = 0
                for name in names {
                    let path = "\(folder)/\(name)"
                    guard let touched = (try? fileManager.attributesOfItem(atPath: path))?[.modificationDate] as? Date,
                          now.timeIntervalSince(touched) > lease, !fileManager.fileExists(atPath: "\(directory)/\(name)") else { continue }
                    if rename(path, "\(directory)/\(name)") == 0 { returned += 1 }
                }
                if returned > 0 { context.logger.notice("\(returned) replies claimed by a daemon that stopped are back in \(directory)") }
                if names.count == returned { rmdir(folder) }
            }
            do { try await Task.sleep(for: .milliseconds(Int64(lease * 1000 / 3))) } catch { return }
        }
    }
}
