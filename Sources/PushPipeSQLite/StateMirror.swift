import PushPipeCore
import Synchronization

/// Stage state (the dedupe filter's watermarks) kept in memory beside the SQLite file.
///
/// An OGS check reads every user's watermarks once per interval, and from the file each of
/// those reads would cost more than the rest of the user's check: a WAL reader's page cache
/// starts over whenever the file changed, and it changes with every outcome committed, so each
/// read goes back to the file for every page on its way. One daemon owns a SQLite file (its
/// holds live in memory too), so the writer can keep a copy instead.
///
/// A stage's rows are loaded on the writer's queue, and committed changes are applied there,
/// after the commit and before anyone waiting for it resumes: the copy never runs ahead of the
/// file nor behind what a caller knows was committed. A stage with more than `capacity` rows
/// is read from the file.
final class StateMirror: Sendable {
    struct Stage: Hashable {
        var pipeline: String
        var stage: String
    }

    /// One row written by a committed transaction.
    struct Change: Sendable {
        var stage: Stage
        var key: String
        var value: JSON
    }

    private struct Copies {
        var loaded: [Stage: [String: JSON]] = [:]
        /// Stages with too many rows to keep: reads go to the file.
        var tooLarge: Set<Stage> = []
    }

    private let copies = Mutex(Copies())
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    enum Lookup {
        case found([String: JSON])
        case notLoaded
        case tooLarge
    }

    /// The values of `keys` that exist, if the stage's copy is loaded.
    func values(of keys: [String], in stage: Stage) -> Lookup {
        copies.withLock { copies in
            guard let values = copies.loaded[stage] else { return copies.tooLarge.contains(stage) ? .tooLarge : .notLoaded }
            var found: [String: JSON] = [:]
            for key in keys { if let value = values[key] { found[key] = value } }
            return .found(found)
        }
    }

    func isLoaded(_ stage: Stage) -> Bool {
        copies.withLock { $0.loaded[stage] != nil || $0.tooLarge.contains(stage) }
    }

    /// Installs a stage's rows, read on the writer's queue; `nil` marks it too large to keep.
    func install(_ rows: [String: JSON]?, for stage: Stage) {
        copies.withLock { copies in
            copies.loaded[stage] = rows
            if rows == nil { copies.tooLarge.insert(stage) }
        }
    }

    /// Applies what a transaction changed, once it committed (on the writer's queue).
    func apply(_ changes: [Change]) {
        guard !changes.isEmpty else { return }
        copies.withLock { copies in
            for change in changes {
                copies.loaded[change.stage]?[change.key] = change.value
                if let count = copies.loaded[change.stage]?.count, count > capacity {
                    copies.loaded[change.stage] = nil
                    copies.tooLarge.insert(change.stage)
                }
            }
        }
    }

    /// Forgets one stage's copy (rows were removed): the next read loads it again.
    func forget(_ stage: Stage) {
        copies.withLock { copies in
            copies.loaded[stage] = nil
            copies.tooLarge.remove(stage)
        }
    }

    /// Forgets every copy: another connection changed the file (not a supported setup, but
    /// a stale watermark must not outlive the next commit).
    func invalidate() {
        copies.withLock { $0 = Copies() }
    }
}
