import Foundation
import GRDB
import NIOPosix
import PushPipeCore
import Synchronization

/// The embedded store: one SQLite file in WAL mode, written through GRDB.
public final class SQLiteStore: Store {
    let database: DatabasePool
    public let path: String
    /// Outcomes, history, watermarks and queued events arrive from many tasks at once: they share transactions.
    let outcomes: GroupCommit<OutcomeWrite>
    let tokenCache = TokenCache()
    /// Tokens marked confirmed already: their deliveries write nothing more (`ConfirmedTokens`).
    let confirmations: ConfirmedTokens
    let held = HeldKeys()
    /// Watermarks in memory (see `StateMirror`); this store is its file's only writer.
    let stateMirror: StateMirror
    private let checkpointer: SQLiteCheckpointer
    /// The store's clock: leases, due times and expiries (this process is the file's only writer).
    let clock: any DaemonClock

    /// Opens (creating folders and the file as needed) and migrates to the latest version.
    /// - Parameters:
    ///   - stateMirrorCapacity: rows of one stage's state kept in memory at most.
    ///   - checkpointThreshold: WAL pages after which a checkpoint starts (tests lower it).
    ///   - observers: told of each commit and checkpoint (the daemon's telemetry).
    ///   - clock: what leases, due times and expiries are measured on.
    public init(
        path: String,
        stateMirrorCapacity: Int = 500_000,
        checkpointThreshold: Int32 = SQLiteCheckpointer.defaultThreshold,
        observers: StoreObservers = StoreObservers(),
        clock: any DaemonClock = .system,
        takingOverQueuedEvents: Bool = false
    ) throws {
        self.path = path
        self.clock = clock
        stateMirror = StateMirror(capacity: stateMirrorCapacity)
        try Self.makePrivate(path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            // WAL with NORMAL sync: a crash keeps every committed transaction but the last
            // few milliseconds' ones on power loss; a killed process loses nothing committed.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let database = try DatabasePool(path: path, configuration: configuration)
        // GRDB ignores migrations it does not know; a newer pushpipe's database is refused instead.
        let unknown = try database.read { db in try Self.migrator.appliedIdentifiers(db).subtracting(Self.migrator.migrations) }
        guard unknown.isEmpty else {
            try database.close()
            throw NewerStoreError(unknownMigrations: unknown.sorted())
        }
        try Self.migrator.migrate(database)
        // Checkpoints run on a connection of their own, beside the writer (`SQLiteCheckpointer`).
        let checkpointer = try SQLiteCheckpointer(path: path, configuration: configuration, threshold: checkpointThreshold)
        try database.writeWithoutTransaction { db in checkpointer.attach(toWriter: db) }
        self.checkpointer = checkpointer
        // The writer alone gets a larger page cache, 8 MB instead of SQLite's 2 MB: every
        // commit looks up the pages where watermarks, schedules and index entries go, all over
        // the file, and with the default cache most of those lookups would read the file again.
        // Readers keep the default: their cache starts over after each commit anyway.
        try database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA cache_size = -8192") }
        self.database = database
        let mirror = stateMirror
        let tokens = tokenCache
        let writerDataVersion = Mutex<Int?>(nil)
        let indexing = UserIndexSchedule()
        let confirmations = ConfirmedTokens()
        self.confirmations = confirmations
        outcomes = GroupCommit { writes in
            let marks = confirmations.unmarked(in: writes)
            // Not `database.write`: it fails when the calling task is cancelled, and the task
            // committing a batch commits other tasks' writes too (outcomes of deliveries that did
            // happen, when a stopping pipeline cancels its workers at the drain timeout).
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                database.asyncWrite(
                    { db in
                        // Changes only when another connection committed: then the mirror may be stale.
                        let version = try Int.fetchOne(db.cachedStatement(sql: "PRAGMA data_version"))
                        if writerDataVersion.withLock({ last in
                            defer { last = version }
                            return last != nil && last != version
                        }) {
                            mirror.invalidate()
                            tokens.invalidate()
                        }
                        let time = clock.now
                        try Self.markConfirmed(marks, at: time, in: db)
                        return try Self.commit(writes, in: db, indexing: indexing, at: time)
                    },
                    completion: { _, result in
                        // On the writer's queue, after the commit: the mirror moves before any waiter resumes.
                        if case .success(let changes) = result {
                            mirror.apply(changes)
                            confirmations.remember(marks)
                        }
                        // A refusal of the data is told as such (`StoreDataError`), here where it enters.
                        continuation.resume(with: result.map { _ in }.mapError { error in Self.dataError(in: error) ?? error })
                    }
                )
            }
        }
        if let commits = observers.commits { observeCommits(commits) }
        if let checkpoints = observers.checkpoints { observeCheckpoints(checkpoints) }
        if takingOverQueuedEvents { try takeOverQueuedEvents() }
    }

    /// One transaction of the group commit; returns the stage state rows it changed.
    @discardableResult
    static func commit(
        _ writes: [OutcomeWrite],
        in db: Database,
        indexing schedule: UserIndexSchedule,
        at time: Double,
        now: ContinuousClock.Instant = .now
    ) throws -> [StateMirror.Change] {
        var changes: [StateMirror.Change] = []
        for write in writes { try apply(write, at: time, in: db, changes: &changes) }
        try indexUserDeliveries(in: db) { tailRows in schedule.isDue(tailRows: tailRows, now: now) }
        return changes
    }

    static func apply(_ write: OutcomeWrite, at now: Double, in db: Database, changes: inout [StateMirror.Change]) throws {
        switch write {
        case .state(let writes, let pipeline):
            for write in writes {
                let text = write.value.compactText
                try db.cachedStatement(
                    sql: """
                        INSERT INTO stage_state (pipeline, stage, key, value, updated_at) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (pipeline, stage, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                        WHERE ? = 0 OR CAST(stage_state.value AS REAL) < CAST(excluded.value AS REAL)
                        """
                ).execute(arguments: .storable([pipeline, write.stage, write.key, text, now, write.onlyForward ? 1 : 0]))
                // SQLite decided whether the value moved forward: the mirror follows its answer,
                // with the value a read of the row would give.
                if db.changesCount > 0 {
                    changes.append(
                        StateMirror.Change(
                            stage: StateMirror.Stage(pipeline: pipeline, stage: write.stage),
                            key: StoredText.storable(write.key),
                            value: try JSON.parse(text)
                        )
                    )
                }
            }
        case .outcome(let deliveries, let state, let events, let webhooks, let finishing, let progress, let pipeline):
            try insert(deliveries, pipeline: pipeline, in: db)
            try apply(.state(state, pipeline: pipeline), at: now, in: db, changes: &changes)
            try upsert(events, in: db)
            for outcome in webhooks { try SQLiteWorkQueue.insert(outcome.work, pipeline: outcome.pipeline, dueAt: now, in: db) }
            for item in progress { try SQLiteWorkQueue.saveCursor(of: item, pipeline: pipeline, in: db) }
            for item in finishing {
                try apply(
                    .dequeue(pipeline: pipeline, kind: QueuedEvent.kind(source: item.source), key: item.key),
                    at: now,
                    in: db,
                    changes: &changes
                )
            }
        case .enqueue(let event, let item, let payload):
            // What it replaces goes first: a copy held again within the same second has its key.
            if let replaced = event.replacing {
                try apply(
                    .dequeue(pipeline: event.pipeline, kind: QueuedEvent.kind(source: replaced.source), key: replaced.key),
                    at: now,
                    in: db,
                    changes: &changes
                )
            }
            try SQLiteWorkQueue.insert(
                item,
                payload: payload,
                pipeline: event.pipeline,
                dueAt: now + (event.dueIn ?? event.lease).inSeconds,
                heldBy: event.dueIn == nil ? event.instance : nil,
                in: db
            )
            if let answer = event.answer { try recordAnswer(answer, in: db) }
        case .dequeue(let pipeline, let kind, let key):
            try db.cachedStatement(sql: "DELETE FROM work WHERE pipeline = ? AND kind = ? AND key = ? AND (owner = ? OR owner IS NULL)")
                .executeBinding { values in
                    values.bind(pipeline, at: 1)
                    values.bind(kind, at: 2)
                    values.bind(key, at: 3)
                    values.bind(LeaseOwner.thisProcess, at: 4)
                }
        }
    }

    /// Rows one INSERT carries at most. A statement's own cost, and AUTOINCREMENT's update of
    /// `sqlite_sequence`, are paid once per statement, not once per notification.
    static let rowsPerInsert = 16

    /// `INSERT ... VALUES (...), (...)` for 1 to `rowsPerInsert` rows (at `count - 1`), made once.
    private static let insertStatements: [String] = (1...rowsPerInsert).map { count in
        "INSERT INTO deliveries (pipeline, event_id, user_id, token_kind, token, outcome, reason, provider_id, attempts, created_at, record) VALUES "
            + Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", count: count).joined(separator: ", ")
    }

    private static func insert(_ rows: [DeliveryRow], pipeline: String, in db: Database) throws {
        for start in stride(from: 0, to: rows.count, by: rowsPerInsert) {
            let chunk = rows[start..<min(rows.count, start + rowsPerInsert)]
            // Cached statements: parsed once per connection and size, not once per write.
            try db.cachedStatement(sql: insertStatements[chunk.count - 1]).executeBinding(scratchBytes: chunk.count * DirectBindings.scratchBytes) {
                values in
                for (position, row) in chunk.enumerated() {
                    let delivery = row.delivery
                    let first = Int32(position * 11)
                    values.bind(pipeline, at: first + 1)
                    values.bind(row.eventID, at: first + 2)
                    values.bind(delivery.user, at: first + 3)
                    values.bind(delivery.tokenKind, at: first + 4)
                    values.bind(delivery.token, at: first + 5)
                    values.bind(delivery.outcome.rawValue, at: first + 6)
                    values.bind(delivery.reason, at: first + 7)
                    values.bind(delivery.providerID, at: first + 8)
                    values.bind(delivery.attempts, at: first + 9)
                    values.bind(delivery.at, at: first + 10)
                    switch row.history {
                    case .none: values.bind(nil as String?, at: first + 11)
                    case .json(let record): values.bind(record.compactText, at: first + 11)
                    case .serialized(let bytes): values.bindText(bytes, at: first + 11)
                    }
                }
            }
        }
    }

    public func appliedMigrations() throws -> [String] {
        try database.read { db in try Self.migrator.appliedMigrations(db) }
    }

    static func token(_ row: Row) -> DeviceToken {
        DeviceToken(user: row["user_id"], kind: row["token_kind"], value: row["token"], scope: row["scope"], updatedAt: row["updated_at"])
    }

    /// The state holds device tokens, Web Push keys and event bodies: a folder it creates is
    /// 0700, and the database is created 0600 before SQLite opens it (SQLite gives its `-wal`
    /// and `-shm` files the database's mode); files left readable by an earlier version are
    /// tightened. An existing folder is the operator's and is left as it is.
    static func makePrivate(_ path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        if !FileManager.default.fileExists(atPath: path) {
            FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        for file in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            _ = chmod(file, 0o600)
        }
    }

    /// A consistent copy of the database file at `source`, read through a read-only connection:
    /// dry runs work on the copy, and the original is not even opened for writing.
    public static func snapshot(of source: String, to path: String) throws {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: source, configuration: configuration)
        try makePrivate(path)
        try queue.inDatabase { db in try db.execute(sql: "VACUUM INTO ?", arguments: [path]) }
        try queue.close()
    }

    /// A short read: on the calling thread, except on one of the server's event loops (route
    /// handlers, the workers of pipelines fed over HTTP), where it goes to a reader's queue. A
    /// read may wait (every reader busy, a page from a slow disk), and on a loop that wait would
    /// hold up every other connection the loop serves.
    ///
    /// Elsewhere on the calling thread: GRDB's async `read` hops to a reader's dispatch queue
    /// and back, two thread switches for a short read, and those switches would be most of what
    /// the per-event reads (watermarks, settings, a user's tokens) cost. WAL readers never wait
    /// for the writer. Not isolated in a transaction (its savepoint would cost a large share of
    /// the read): every caller runs one statement, which SQLite reads from one snapshot anyway.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        if MultiThreadedEventLoopGroup.currentEventLoop != nil { return try await database.read(body) }
        return try readOnThisThread(body)
    }

    /// Synchronous, so that GRDB's blocking `unsafeRead` is the one called (from an async
    /// function the name picks its async overload, which hops to a reader's queue).
    private func readOnThisThread<T>(_ body: (Database) throws -> T) throws -> T {
        try database.unsafeRead(body)
    }

    public func ping() async throws {
        _ = try await database.read { try Int.fetchOne($0, sql: "SELECT 1") }
    }

    public func observeCommits(_ observer: @escaping @Sendable (Duration) -> Void) {
        outcomes.observer.withLock { $0 = CommitObserver(observe: observer) }
    }

    public func observeCheckpoints(_ observer: @escaping @Sendable (StoreCheckpoint) -> Void) {
        checkpointer.observe(observer)
    }

    public func close() async throws {
        // The writer first: the checkpointer lets go of the writer's WAL hook once nothing calls it.
        try database.close()
        try checkpointer.close()
    }
}
