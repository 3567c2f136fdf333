import Foundation
import Logging
import PostgresNIO
import PushPipePostgresTesting
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipePostgres

/// The PostgreSQL store's group commit under cancellation.
@Suite struct PostgresStoreCommitTests {
    func queued(_ id: String) -> QueuedEvent {
        QueuedEvent(pipeline: "p", source: "sources[0]", eventID: id, user: "alice", time: 1, body: ["id": .string(id)])
    }

    /// The write whose task leads a group commit carries other tasks' writes. When its task is
    /// cancelled (a pipeline stopping at its drain timeout), the pool must not refuse it a
    /// connection, or the whole batch would fail, other pipelines' writes with it. The SQLite store shields
    /// them; this one must too. A table lock holds one commit while three writes queue behind
    /// it; the first of them, which leads the next batch, is cancelled.
    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func aCancelledLeaderDoesNotFailTheWritesItCommits() async throws {
        let location = try await TestStores.freshPostgresDatabase()
        let logger = Logger(label: "test")
        let store = try await PostgresStore(location: location, logger: logger)
        let locker = PostgresClient(configuration: location.clientConfiguration, backgroundLogger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await locker.run() }
            let locked = ObservedState(false)
            let unlock = Gate()
            // Opened however the test ends: the locker's transaction waits at the gate, and the
            // group waits for the locker.
            defer { unlock.open() }
            group.addTask {
                try await locker.withTransaction(logger: logger) { connection in
                    try await connection.query("LOCK TABLE work IN ACCESS EXCLUSIVE MODE", logger: logger)
                    locked.update { $0 = true }
                    await unlock.wait()
                }
            }
            try await locked.wait(timeout: 10, { $0 ? () : nil }, failure: { _ in WaitTimedOut("the table lock") })
            let blocked = Task { try await store.enqueue(queued("e0")) }
            // e0's commit waits for the lock before the others are written: on a busy machine
            // they could otherwise reach the commit's batch before it started, and join it.
            try await eventually("e0's commit waiting for the table lock") {
                try await locker.query(
                    "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'work'::regclass AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                    logger: logger
                ).collect().first?.decode(Int.self) ?? 0 >= 1
            }
            let cancelled = Task { try await store.enqueue(queued("e1")) }
            let others = ["e2", "e3"].map { id in Task { try await store.enqueue(queued(id)) } }
            // The three queue behind the blocked commit (no event tells when a task got there).
            try await eventually("three writes waiting behind the blocked commit") { store.outcomes.pendingWrites >= 3 }
            #expect(store.outcomes.pendingWrites == 3)
            cancelled.cancel()
            unlock.open()
            try await blocked.value
            for other in others {
                await #expect(throws: Never.self, "another task's write is committed whatever happened to the leader's task") {
                    try await other.value
                }
            }
            _ = try? await cancelled.value
            let rows = try await locker.query("SELECT payload::json->>'event_id' FROM work ORDER BY 1", logger: logger).collect()
            let ids = try rows.map { try $0.decode(String.self) }
            #expect(Set(["e0", "e2", "e3"]).isSubset(of: Set(ids)), "stored: \(ids)")
            group.cancelAll()
        }
        try await store.close()
    }

    /// A batch of outcomes, removals from the queue and accepted events is one statement (no
    /// transaction): written whole. One whose accepted event has the key of an item it removes
    /// takes the transaction, where the removal goes first: PostgreSQL runs a statement's
    /// inserts before its removals, so the item would be skipped, then removed.
    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func outcomesRemovalsAndAcceptedEventsAreOneStatementUnlessAKeyIsReused() async throws {
        let store = try await PostgresStore(location: try await TestStores.freshPostgresDatabase(), logger: Logger(label: "test"))
        try await withCleanup(
            {
                let done = queued("done")
                try await store.enqueue(done)
                let finishing = Event.QueueItem(source: done.source, key: done.key)
                let record = EventRecord(pipeline: "p", eventID: "done", state: .delivered, acceptedAt: 1, updatedAt: 2)
                let writes: [OutcomeWrite] = [
                    .outcome(deliveries: [], state: [], events: [record], webhooks: [], finishing: [finishing], progress: [], pipeline: "p"),
                    .enqueue(queued("new")),
                ]
                let statement = try #require(PostgresStore.outcomesOnly(writes), "one statement")
                _ = try await store.connections.rows(statement.statement)
                let keys = try await store.connections.rows("SELECT payload::json->>'event_id' FROM work").map { try $0.decode(String.self) }
                #expect(keys == ["new"])
                let status = try await store.eventRecords(eventID: "done", pipeline: "p")
                #expect(status.records.first?.state == .delivered && status.queued.isEmpty)
                // The same key removed and inserted: not one statement.
                var again = queued("again")
                again.key = try #require(try await store.pipeline("p").claimQueuedEvents(source: "sources[0]", lease: .seconds(60), limit: 1).first)
                    .key
                let reused: [OutcomeWrite] = [
                    .outcome(
                        deliveries: [],
                        state: [],
                        events: [],
                        webhooks: [],
                        finishing: [Event.QueueItem(source: again.source, key: again.key)],
                        progress: [],
                        pipeline: "p"
                    ),
                    .enqueue(again),
                ]
                #expect(PostgresStore.outcomesOnly(reused) == nil)
                try await store.connections.transaction { connection in
                    try await PostgresStore.commit(reused, on: connection, logger: Logger(label: "test"))
                }
                let left = try await store.connections.rows("SELECT payload::json->>'event_id' FROM work").map { try $0.decode(String.self) }
                #expect(left == ["again"], "the removal went first, then the item under its key")
            },
            cleanup: { try? await store.close() }
        )
    }

    /// An event's status read while its outcome commits sees its record or its queue item,
    /// never neither: the outcome removes the item in the same commit, and the status reads
    /// the queue before the records. The commit is held open with the queue table locked, so
    /// the status's read of the queue waits for it; records first, it read no record before
    /// the commit and no item after it.
    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func aStatusReadDuringTheOutcomesCommitSeesTheRecordOrTheItem() async throws {
        let location = try await TestStores.freshPostgresDatabase()
        let logger = Logger(label: "test")
        let store = try await PostgresStore(location: location, logger: logger)
        let writer = PostgresClient(configuration: location.clientConfiguration, backgroundLogger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await writer.run() }
            let event = queued("racing")
            try await store.enqueue(event)
            var outcome = OutcomeRows()
            let record = EventRecord(pipeline: "p", eventID: "racing", state: .delivered, acceptedAt: 1, updatedAt: 2)
            outcome.add([], [record], finishing: [Event.QueueItem(source: event.source, key: event.key)], pipeline: "p")
            let statement = outcome.statement
            let written = ObservedState(false)
            let commit = Gate()
            group.addTask {
                try await writer.withTransaction(logger: logger) { connection in
                    try await connection.query("LOCK TABLE work IN ACCESS EXCLUSIVE MODE", logger: logger)
                    _ = try await connection.query(statement, logger: logger).collect()
                    written.update { $0 = true }
                    await commit.wait()
                }
            }
            try await written.wait(timeout: 30, { $0 ? () : nil }, failure: { _ in WaitTimedOut("the uncommitted outcome") })
            let status = Task { try await store.eventRecords(eventID: "racing", pipeline: "p") }
            // The status waits for the lock (seen by the server) before the outcome commits.
            try await eventually("the status read waits for the lock") {
                let waiting = try await writer.query(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
                    logger: logger
                )
                .collect().first?.decode(Int.self)
                return (waiting ?? 0) > 0 ? () : nil
            }
            commit.open()
            let seen = try await status.value
            #expect(seen.records.map(\.state) == [.delivered] || !seen.queued.isEmpty, "neither the record nor the item: \(seen)")
            group.cancelAll()
        }
    }
}
