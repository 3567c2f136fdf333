import Foundation
import GRDB
import GRDBSQLite
import PushPipeCore
import Synchronization

/// Copies the WAL back into the database file on a connection of its own, so that commits
/// do not wait for the bulk of it.
///
/// SQLite's automatic checkpoint runs inside the commit that crosses its threshold: that commit
/// copies the WAL's pages and syncs two files, and meanwhile every worker waiting for its
/// outcome record stands still and the APNs connection runs dry. A checkpoint on another
/// connection runs beside the writer: WAL mode lets one checkpointer copy the frames committed
/// so far while the writer appends new ones. Durability is the same either way: with
/// `synchronous = NORMAL` the WAL is synced before each checkpoint and the database file after
/// it, whichever connection runs it.
///
/// The WAL only starts over from its beginning when a checkpoint has copied all of it, and
/// under steady writes one running beside the writer never does: the frames appended while it
/// ran remain. So after a background pass the writer copies what it left behind itself (the
/// commits of the pass's few milliseconds; the fixed part is two `fdatasync`s) and the WAL
/// restarts at the next commit. Without that step the WAL would grow without bound under a
/// steady stream of registrations.
public final class SQLiteCheckpointer: Sendable {
    /// WAL pages after which a checkpoint starts (32 MB): each batch of the per-user index
    /// dirties index pages all over the file, and checkpointing every 8,000 pages instead of
    /// SQLite's 1,000 copies each of those pages back once per 32 MB instead of once per 4 MB.
    public static let defaultThreshold: Int32 = 8000
    private let connection: DatabaseQueue
    private let threshold: Int32
    private let running = Atomic<Bool>(false)
    /// Set when a background pass left frames behind: the writer's next commit copies them.
    private let catchUpDue = Atomic<Bool>(false)
    /// Told of every checkpoint (`StoreObservers.checkpoints`).
    private let observer = Mutex<(@Sendable (StoreCheckpoint) -> Void)?>(nil)
    private let hookTarget = Mutex<Unmanaged<WALHookTarget>?>(nil)

    init(path: String, configuration: Configuration, threshold: Int32 = defaultThreshold) throws {
        connection = try DatabaseQueue(path: path, configuration: configuration)
        self.threshold = threshold
    }

    func observe(_ observer: @escaping @Sendable (StoreCheckpoint) -> Void) {
        self.observer.withLock { $0 = observer }
    }

    /// Makes the writer's commits report the WAL's size here instead of checkpointing
    /// themselves: a WAL hook replaces SQLite's automatic checkpoint on that connection.
    func attach(toWriter db: Database) {
        // The hook holds a weak reference: a store dropped without `close()` may leave its
        // writer (and pending group commits) alive after this checkpointer is gone; then
        // the writer falls back to checkpointing inline. The box is released after `close()`.
        let target = Unmanaged.passRetained(WALHookTarget(self))
        hookTarget.withLock { $0 = target }
        sqlite3_wal_hook(
            db.sqliteConnection,
            { context, writer, name, pages in
                let target = Unmanaged<WALHookTarget>.fromOpaque(context!).takeUnretainedValue()
                if let checkpointer = target.checkpointer {
                    checkpointer.committed(walPages: pages, writer: writer, name: name)
                } else if pages >= SQLiteCheckpointer.defaultThreshold {
                    sqlite3_wal_checkpoint_v2(writer, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                }
                return SQLITE_OK
            },
            target.toOpaque()
        )
    }

    /// On the writer's thread, after each commit.
    private func committed(walPages: Int32, writer: OpaquePointer?, name: UnsafePointer<CChar>?) {
        guard walPages >= threshold, !running.load(ordering: .acquiring) else { return }
        if catchUpDue.exchange(false, ordering: .acquiringAndReleasing) {
            checkpointInline(writer: writer, name: name)
            return
        }
        running.store(true, ordering: .releasing)
        connection.asyncWriteWithoutTransaction { [self] db in
            let started = ContinuousClock.now
            defer { running.store(false, ordering: .releasing) }
            guard let frames = try? db.checkpoint(.passive) else { return }
            // Even a pass that copied the whole WAL as it found it leaves the frames of the
            // commits made meanwhile, and a transaction the writer began before the pass ended
            // keeps the WAL from restarting: the writer's next commit copies the rest.
            catchUpDue.store(true, ordering: .releasing)
            report(.background, walFrames: frames.walFrameCount, checkpointed: frames.checkpointedFrameCount, since: started)
        }
    }

    /// A passive checkpoint on the writer: nothing appends meanwhile, so unless a reader holds
    /// old frames it copies all of them and the next commit restarts the WAL.
    private func checkpointInline(writer: OpaquePointer?, name: UnsafePointer<CChar>?) {
        let started = ContinuousClock.now
        var walFrames: Int32 = 0
        var checkpointed: Int32 = 0
        guard sqlite3_wal_checkpoint_v2(writer, name, SQLITE_CHECKPOINT_PASSIVE, &walFrames, &checkpointed) == SQLITE_OK else { return }
        report(.catchUp, walFrames: Int(walFrames), checkpointed: Int(checkpointed), since: started)
    }

    private func report(_ kind: StoreCheckpoint.Kind, walFrames: Int, checkpointed: Int, since started: ContinuousClock.Instant) {
        guard let observe = observer.withLock({ $0 }) else { return }
        observe(StoreCheckpoint(kind: kind, walFrames: walFrames, checkpointedFrames: checkpointed, duration: ContinuousClock.now - started))
    }

    /// Waits for a checkpoint in progress, then closes the connection. Call after the writer
    /// is closed: nothing calls the hook any more, so its box can go.
    func close() throws {
        try connection.writeWithoutTransaction { _ in }
        try connection.close()
        hookTarget.withLock { target in
            target?.release()
            target = nil
        }
    }
}

/// What the writer's WAL hook points at.
private final class WALHookTarget: Sendable {
    weak let checkpointer: SQLiteCheckpointer?
    init(_ checkpointer: SQLiteCheckpointer) { self.checkpointer = checkpointer }
}
