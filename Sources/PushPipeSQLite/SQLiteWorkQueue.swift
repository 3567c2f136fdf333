import Foundation
import GRDB
import PushPipeCore

/// A pipeline's work items in the `work` table. Writes are serial here (the one writer), so a
/// claim sees every group whole and no two claims take the same item; the store's clock is
/// this process's, the file's only writer.
struct SQLiteWorkQueue: WorkQueue {
    let database: DatabasePool
    let pipeline: String
    let clock: any DaemonClock

    func add(_ items: [WorkItem], after delays: [Duration]) async throws {
        precondition(items.count == delays.count, "a delay per item")
        guard !items.isEmpty else { return }
        // One now for all: items spread over an interval keep their spacing exactly.
        let now = clock.now
        try await database.write { db in
            for (item, delay) in zip(items, delays) { try Self.insert(item, pipeline: pipeline, dueAt: now + delay.inSeconds, in: db) }
        }
    }

    /// Also in the transaction of another write (webhook outcomes with their deliveries, an
    /// accepted event with its answer, its payload serialized already). Held by `owner` until
    /// it is due, if given.
    static func insert(
        _ item: WorkItem,
        payload: String? = nil,
        pipeline: String,
        dueAt due: Double,
        heldBy owner: String? = nil,
        in db: Database
    ) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO work (pipeline, kind, key, due_at, owner, lease_until, payload, attempts, created_at, work_group, cursor)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (pipeline, kind, key) DO NOTHING
                """
        ).executeBinding { values in
            // Bound directly: every accepted event comes through here in its 202's commit.
            values.bind(pipeline, at: 1)
            values.bind(item.kind, at: 2)
            values.bind(item.key, at: 3)
            values.bind(due, at: 4)
            values.bind(owner, at: 5)
            values.bind(owner == nil ? 0 : due, at: 6)
            values.bind(payload ?? item.payload.compactText, at: 7)
            values.bind(item.attempts, at: 8)
            values.bind(item.createdAt, at: 9)
            values.bind(item.group, at: 10)
            values.bind(item.cursor, at: 11)
        }
    }

    /// In the transaction of an outcome: `item`'s cursor and time saved, unless another process
    /// holds it; the item added (never due, held by nobody) if it is not there.
    static func saveCursor(of item: WorkItem, pipeline: String, in db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO work (pipeline, kind, key, due_at, owner, lease_until, payload, attempts, created_at, work_group, cursor)
                VALUES (?, ?, ?, ?, NULL, 0, ?, 0, ?, ?, ?) ON CONFLICT (pipeline, kind, key) DO UPDATE
                SET cursor = excluded.cursor, created_at = excluded.created_at WHERE work.owner IS NULL OR work.owner = ?
                """
        ).execute(
            arguments: .storable([
                pipeline, item.kind, item.key, WorkItem.neverDue, item.payload.compactText, item.createdAt, item.group,
                item.cursor, LeaseOwner.thisProcess,
            ])
        )
    }

    func claim(_ kind: String, limit: Int, lease: Duration, grouping: WorkGrouping?) async throws -> [WorkItem] {
        let now = clock.now
        return try await database.write { [pipeline] db in
            let chosen = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT \(Self.columns) FROM work WHERE pipeline = ? AND kind = ? AND due_at <= ? AND lease_until < ? ORDER BY due_at, id LIMIT
                        ?
                        """
                ),
                arguments: [pipeline, kind, now, now, limit]
            ).map(Self.item)
            guard let grouping else {
                try Self.hold(chosen, until: now + lease.inSeconds, in: db)
                return chosen.sorted { $0.id < $1.id }
            }
            var groups = Set(chosen.compactMap(\.group))
            let name = try db.cachedStatement(sql: "UPDATE work SET work_group = ? WHERE id = ?")
            for (group, ids) in grouping(chosen.filter { $0.group == nil }) {
                for id in ids { try name.execute(arguments: [group, id]) }
                groups.insert(group)
            }
            let members = try db.cachedStatement(
                sql: """
                    SELECT \(Self.columns) FROM work WHERE pipeline = ? AND kind = ? AND work_group = ? AND lease_until < ? ORDER BY id
                    """
            )
            var claimed: [WorkItem] = []
            for group in groups { claimed += try Row.fetchAll(members, arguments: [pipeline, kind, group, now]).map(Self.item) }
            try Self.hold(claimed, until: now + lease.inSeconds, in: db)
            return claimed.sorted { $0.id < $1.id }
        }
    }

    func renew(_ kind: String, keys: Set<String>, lease: Duration) async throws {
        // A claimed item falls due again when its lease ends; a taken key never does.
        // The WHERE's bare `?`s follow `?2`, so they are ?3... and take the values after these two.
        try await forOwnKeys(
            "UPDATE work SET lease_until = ?1, due_at = CASE WHEN due_at < ?2 THEN ?1 ELSE due_at END",
            [(clock.now + lease.inSeconds).databaseValue, takenKeysFallDue.databaseValue],
            kind,
            keys
        )
    }

    func complete(_ kind: String, keys: Set<String>) async throws {
        try await forOwnKeys("DELETE FROM work", [], kind, keys)
    }

    func retry(_ kind: String, keys: Set<String>, after delay: Duration) async throws {
        try await forOwnKeys(
            "UPDATE work SET attempts = attempts + 1, due_at = ?, owner = NULL, lease_until = 0",
            [(clock.now + delay.inSeconds).databaseValue],
            kind,
            keys
        )
    }

    func release(_ kind: String, keys: Set<String>) async throws {
        try await forOwnKeys("UPDATE work SET owner = NULL, lease_until = 0, due_at = min(due_at, ?)", [clock.now.databaseValue], kind, keys)
    }

    func item(_ kind: String, key: String) async throws -> WorkItem? {
        try await database.read { [pipeline] db in try Self.item(kind, key: key, pipeline: pipeline, in: db) }
    }

    /// The item of `kind` under `key`, in a read or in a write that changes it next.
    private static func item(_ kind: String, key: String, pipeline: String, in db: Database) throws -> WorkItem? {
        try Row.fetchOne(
            db,
            sql: "SELECT \(columns) FROM work WHERE pipeline = ? AND kind = ? AND key = ?",
            arguments: .storable([pipeline, kind, key])
        ).map(item)
    }

    func prune(_ kind: String, createdBefore cutoff: Double, limit: Int) async throws -> Int {
        try await database.write { [pipeline] db in
            try db.execute(
                sql: """
                    DELETE FROM work WHERE id IN (SELECT id FROM work WHERE pipeline = ? AND kind = ? AND created_at < ? ORDER BY id LIMIT ?)
                    """,
                arguments: [pipeline, kind, cutoff, limit]
            )
            return db.changesCount
        }
    }

    func keys(_ kind: String) async throws -> [String] {
        try await database.read { [pipeline] db in
            try String.fetchAll(db, sql: "SELECT key FROM work WHERE pipeline = ? AND kind = ?", arguments: [pipeline, kind])
        }
    }

    func remove(_ kind: String, keys: [String]) async throws {
        guard !keys.isEmpty else { return }
        try await database.write { [pipeline] db in
            let statement = try db.cachedStatement(sql: "DELETE FROM work WHERE pipeline = ? AND kind = ? AND key = ?")
            for key in keys { try statement.execute(arguments: .storable([pipeline, kind, key])) }
        }
    }

    func admit(_ item: WorkItem, limits: [WorkLimit], adding: Bool) async throws -> Bool {
        try await database.write { [pipeline] db in
            // One writer: the count and the insert are one step for every daemon.
            let admitted = try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM work WHERE pipeline = ? AND kind = ? AND key = ?"),
                arguments: .storable([pipeline, item.kind, item.key])
            )
            if admitted != nil { return true }
            for limit in limits {
                let count = try Int.fetchOne(
                    db.cachedStatement(sql: "SELECT count(*) FROM work WHERE pipeline = ? AND kind = ? AND work_group = ? AND created_at > ?"),
                    arguments: .storable([pipeline, item.kind, item.group]) + [limit.since]
                )
                if count ?? 0 >= limit.count { return false }
            }
            if adding { try Self.insert(item, pipeline: pipeline, dueAt: WorkItem.neverDue, in: db) }
            return true
        }
    }

    func accumulate(_ item: WorkItem, _ combine: @escaping @Sendable (JSON) -> JSON) async throws -> JSON {
        try await database.write { [pipeline] db in
            let arguments: StatementArguments = .storable([pipeline, item.kind, item.key])
            // One writer: the read and the write are one step for every daemon.
            guard
                let stored = try String.fetchOne(
                    db,
                    sql: "SELECT payload FROM work WHERE pipeline = ? AND kind = ? AND key = ?",
                    arguments: arguments
                )
            else {
                try Self.insert(item, pipeline: pipeline, dueAt: WorkItem.neverDue, in: db)
                return item.payload
            }
            let combined = combine(try JSON.parse(stored))
            try db.execute(
                sql: "UPDATE work SET payload = ? WHERE pipeline = ? AND kind = ? AND key = ?",
                arguments: .storable([combined.compactText]) + arguments
            )
            return combined
        }
    }

    func takeAway(_ kind: String, key: String, if accept: @escaping @Sendable (WorkItem) -> Bool) async throws -> WorkItem? {
        try await database.write { [pipeline] db in
            guard let item = try Self.item(kind, key: key, pipeline: pipeline, in: db), accept(item) else { return nil }
            try db.execute(sql: "DELETE FROM work WHERE id = ?", arguments: [item.id])
            return item
        }
    }

    func withdraw(_ kind: String, keysStartingWith prefix: String, if accept: @escaping @Sendable (WorkItem) -> Bool) async throws -> [WorkItem] {
        let now = clock.now
        return try await database.write { [pipeline] db in
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT \(Self.columns) FROM work INDEXED BY work_by_key WHERE pipeline = ? AND kind = ? AND key >= ? AND key < ?
                        AND (owner IS NULL OR lease_until < ?)
                        """
                ),
                arguments: .storable([pipeline, kind, prefix, Self.keysEnd(startingWith: prefix)]) + [now]
            )
            let withdrawn = try rows.map(Self.item).filter(accept)
            let delete = try db.cachedStatement(sql: "DELETE FROM work WHERE id = ?")
            for item in withdrawn { try delete.execute(arguments: [item.id]) }
            return withdrawn
        }
    }

    func take(_ kind: String, keys: Set<String>, lease: Duration) async throws -> Set<String> {
        guard !keys.isEmpty else { return [] }
        let now = clock.now
        return try await database.write { [pipeline] db in
            // Taken when nobody has the key or its holder's lease ran out: the update's WHERE
            // decides, and a key it skipped changed no row.
            let statement = try db.cachedStatement(
                sql: """
                    INSERT INTO work (pipeline, kind, key, due_at, owner, lease_until, payload, created_at) VALUES (?, ?, ?, ?, ?, ?, '{}', ?)
                    ON CONFLICT (pipeline, kind, key) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until
                    WHERE work.lease_until < excluded.created_at
                    """
            )
            var taken = Set<String>()
            for key in keys {
                try statement.execute(
                    arguments: .storable([pipeline, kind, key, takenKeysFallDue, LeaseOwner.thisProcess, now + lease.inSeconds, now])
                )
                if db.changesCount > 0 { taken.insert(key) }
            }
            return taken
        }
    }

    func forgetLapsedTakes(kindsStartingWith prefix: String) async throws -> Int {
        let now = clock.now
        return try await database.write { [pipeline] db in
            try db.execute(
                sql: """
                    DELETE FROM work WHERE pipeline = ? AND \(Self.kindStartsWith) AND due_at >= ? AND lease_until < ?
                    """,
                arguments: .storable([pipeline, prefix, prefix, takenKeysFallDue, now])
            )
            return db.changesCount
        }
    }

    /// Runs `head` (an UPDATE or DELETE of `work`, its own `values` bound first) on this
    /// process's items of `kind` under `keys`.
    private func forOwnKeys(_ head: String, _ values: [DatabaseValue], _ kind: String, _ keys: Set<String>) async throws {
        guard !keys.isEmpty else { return }
        try await database.write { [pipeline] db in
            let statement = try db.cachedStatement(sql: "\(head) WHERE pipeline = ? AND kind = ? AND key = ? AND owner = ?")
            for key in keys {
                try statement.execute(arguments: StatementArguments(values) + .storable([pipeline, kind, key, LeaseOwner.thisProcess]))
            }
        }
    }

    /// Makes `items` this process's until `until`, in one statement however many (a poller
    /// claims a hundred at a time). A claimed item falls due again when its lease ends: a claim
    /// then looks at due times alone, in their index, however many items are held.
    private static func hold(_ items: [WorkItem], until: Double, in db: Database) throws {
        guard !items.isEmpty else { return }
        try db.cachedStatement(
            sql: """
                UPDATE OR FAIL work SET owner = ?1, lease_until = ?2, due_at = ?2 WHERE id IN (SELECT value FROM json_each(?3))
                """
        ).execute(arguments: [LeaseOwner.thisProcess, until, JSON.array(items.map { .int($0.id) }).compactText])
    }

    /// The kinds that start with a prefix (bound twice) as a range, which the (pipeline, kind,
    /// key) index reads, where a test of the prefix would scan the pipeline's work. Kinds compare
    /// as bytes, and no UTF-8 text holds the byte 0xFF: the range holds exactly those kinds.
    static let kindStartsWith = "kind >= ? AND kind < ? || x'ff'"

    static let columns = "id, kind, key, payload, attempts, created_at, work_group, cursor"

    static func item(_ row: Row) throws -> WorkItem {
        WorkItem(
            id: row["id"],
            kind: row["kind"],
            key: row["key"],
            payload: try JSON.parse(row["payload"] as String),
            attempts: row["attempts"],
            createdAt: row["created_at"],
            group: row["work_group"],
            cursor: row["cursor"]
        )
    }
}
