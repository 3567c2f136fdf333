import Foundation
import GRDB
import PushPipeCore

/// Accepted events as work items (`QueuedEvent+Work`); they go in and out in the group commit.
extension SQLiteStore {
    public func enqueue(_ event: QueuedEvent) async throws {
        try await outcomes.submit(.enqueue(event))
    }

    public func queuedEventCounts() async throws -> [QueuedEventCount] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT pipeline, kind, count(*) AS count FROM work WHERE \(Self.isQueuedEvent) GROUP BY pipeline, kind ORDER BY pipeline, kind
                    """
            ).map { QueuedEventCount(pipeline: $0["pipeline"], source: QueuedEvent.source(ofKind: $0["kind"]) ?? "", count: $0["count"]) }
        }
    }

    /// A SQLite state has one daemon (`SQLiteStateLock`): the one that opens it takes over at
    /// once whatever accepted events an earlier process left held, instead of waiting out leases
    /// whose holder is gone. What nobody holds keeps its due time (a held event's instant).
    func takeOverQueuedEvents() throws {
        try database.write { db in
            try db.execute(
                sql:
                    "UPDATE work SET owner = NULL, lease_until = 0, due_at = min(due_at, ?) WHERE \(Self.isQueuedEvent) AND owner IS NOT NULL AND owner IS NOT ?",
                arguments: [clock.now, LeaseOwner.thisProcess]
            )
        }
    }

    /// The events of `eventID` still waiting, oldest first. In a pipeline, a range of the work
    /// table's key index: its event kinds, each read for keys that start with the id (the
    /// entries of the few events in flight, not the rows). Without one, every pipeline's
    /// (`pushpipe events`). No index of its own: every accepted event would write one more
    /// entry, for a lookup that reads a few.
    static func queuedEvents(eventID: String, pipeline: String?, in db: Database) throws -> [QueuedEvent] {
        let prefix = StoredText.storable(QueuedEvent.keyPrefix(eventID: eventID))
        let range: StatementArguments = [QueuedEvent.kinds, QueuedEvent.kinds, prefix, StoredText.storable(eventID) + "\u{0B}"]
        return try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT pipeline, owner, \(SQLiteWorkQueue.columns) FROM work
                    \(pipeline == nil ? "WHERE " : "INDEXED BY work_by_key WHERE pipeline = ? AND ")\(SQLiteWorkQueue.kindStartsWith)
                    AND key >= ? AND key < ? ORDER BY id
                    """
            ),
            arguments: pipeline.map { [$0] + range } ?? range
        ).compactMap { row in
            try? QueuedEvent(work: try SQLiteWorkQueue.item(row), pipeline: row["pipeline"], owner: row["owner"], lease: .zero)
        }.filter { StoredText.storable($0.eventID) == StoredText.storable(eventID) }
    }

    /// Whether a row of `work` is a queued event.
    static let isQueuedEvent = "substr(kind, 1, \(QueuedEvent.kinds.utf8.count)) = '\(QueuedEvent.kinds)'"
}

extension SQLitePipelineStore {
    /// Moves what a claim here would take (another process's events, or this one's whose lease
    /// ran out): this process keeps what it holds under the old key, as a claim leaves it.
    func renameSource(from: String, to: String, lease: Duration) async throws -> Int {
        let now = store.clock.now
        return try await store.database.write { db in
            try db.execute(
                sql: "UPDATE work SET kind = ? WHERE pipeline = ? AND kind = ? AND (owner IS NOT ? OR lease_until < ?)",
                arguments: [QueuedEvent.kind(source: to), pipeline, QueuedEvent.kind(source: from), LeaseOwner.thisProcess, now]
            )
            let moved = db.changesCount
            // A user already scheduled under the new key keeps that schedule.
            let (old, new) = (WorkItem.pollKind(source: from), WorkItem.pollKind(source: to))
            try db.execute(sql: "UPDATE OR IGNORE work SET kind = ? WHERE pipeline = ? AND kind = ?", arguments: [new, pipeline, old])
            try db.execute(
                sql: "DELETE FROM work WHERE pipeline = ? AND (kind = ? OR kind = ? AND key = ?)",
                arguments: [pipeline, old, WorkItem.scheduleSyncs, old]
            )
            return moved
        }
    }
}
