import PushPipeCore
import Synchronization

/// When the per-user index takes in the table's tail (`SQLiteStore+UserIndex`): once the tail
/// holds a batch, or once rows have waited in it for `delay`. Under load a batch fills in a
/// fraction of a second; light traffic gets its rows indexed (and seen by retention) a second
/// later.
///
/// The wait is timed by the writer's clock from the commit that left rows waiting, not by the
/// rows' `created_at`, which callers set (a clock set back would have held rows out of the
/// index until it caught up).
///
/// Not "when a commit held one write": one write is a worker's whole batch, many rows for as
/// many users under APNs load, and indexing each such commit would dirty a page of
/// `user_deliveries` per user, so index pages would make up most of the WAL.
final class UserIndexSchedule: Sendable {
    /// Rows the tail holds at most before a commit indexes them.
    static let batch: Int64 = 8192
    /// The longest rows wait in the tail while commits go on.
    static let delay: Duration = .seconds(1)

    private let waitingSince = Mutex<ContinuousClock.Instant?>(nil)

    /// After a commit that leaves `tailRows` rows out of the index: whether to index them now.
    func isDue(tailRows: Int64, now: ContinuousClock.Instant) -> Bool {
        waitingSince.withLock { since in
            // Nothing waits, or a full batch: the next rows start a new wait.
            if tailRows == 0 || tailRows >= Self.batch {
                since = nil
                return tailRows > 0
            }
            // Rows that just began to wait: their clock starts here.
            guard let started = since else {
                since = now
                return false
            }
            guard now - started >= Self.delay else { return false }
            since = nil
            return true
        }
    }
}
