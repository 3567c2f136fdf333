import Synchronization

/// Stage state (the dedupe filter's watermarks) kept in memory beside the SQLite file.
///
/// An OGS check reads every user's watermarks once per interval, and each of those reads cost
/// more than the rest of the user's check: a WAL reader's page cache starts over whenever the
/// file changed, and it changes with every outcome committed, so each read went back to the
/// file for every page on its way (40 µs per user, a tenth of a check's CPU). One daemon owns a
/// SQLite file (its holds live in memory too), so the writer can keep a copy instead.
///
/// A stage's rows are loaded on the writer's queue, and committed changes are applied there,
/// after the commit and before anyone waiting for it resumes: the copy never runs ahead of the
/// file nor behind what a caller knows was committed. A stage with more than `capacity` rows
/// is read from the file as before.
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

    private enum Copy {
        case loaded([String: JSON])
        /// Too many rows to keep: reads go to the file.
        case tooLarge
    }

    private let copies = Mutex<[Stage: Copy]>([:])
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
            switch copies[stage] {
            case .loaded(let values)?:
                var found: [String: JSON] = [:]
                for key in keys { if let value = values[key] { found[key] = value } }
                return .found(found)
            case .tooLarge?: return .tooLarge
            case nil: return .notLoaded
            }
        }
    }

    func isLoaded(_ stage: Stage) -> Bool {
        copies.withLock { $0[stage] != nil }
    }

    /// Installs a stage's rows, read on the writer's queue; `nil` marks it too large to keep.
    func install(_ rows: [String: JSON]?, for stage: Stage) {
        copies.withLock { $0[stage] = rows.map(Copy.loaded) ?? .tooLarge }
    }

    /// Applies what a transaction changed, once it committed (on the writer's queue).
    func apply(_ changes: [Change]) {
        guard !changes.isEmpty else { return }
        copies.withLock { copies in
            for change in changes {
                guard case .loaded(var values)? = copies[change.stage] else { continue }
                // Moved out of the dictionary first, so the update does not copy every row.
                copies[change.stage] = nil
                values[change.key] = change.value
                copies[change.stage] = values.count > capacity ? .tooLarge : .loaded(values)
            }
        }
    }

    /// Forgets every copy: another connection changed the file (not a supported setup, but
    /// a stale watermark must not outlive the next commit).
    func invalidate() {
        copies.withLock { $0.removeAll() }
    }
}
