import Foundation
import GRDB
import PushPipeCore

/// One pipeline's part of the SQLite store (`Store.pipeline`): the store and the pipeline's name.
struct SQLitePipelineStore: GroupCommittedPipelineStore {
    let store: SQLiteStore
    let pipeline: String

    var name: String { pipeline }
    var outcomes: GroupCommit<OutcomeWrite> { store.outcomes }
    var tokenCache: TokenCache { store.tokenCache }
    var work: any WorkQueue { SQLiteWorkQueue(database: store.database, pipeline: pipeline, clock: store.clock) }
}

extension SQLiteStore {
    public func pipeline(_ name: String) -> any PipelineStore { SQLitePipelineStore(store: self, pipeline: name) }
}

extension SQLitePipelineStore {
    func register(_ token: DeviceToken, environment: String?, replace: Bool, keepingAtMost: Int?) async throws {
        defer { store.tokenCache.invalidate() }
        store.confirmations.forget(token, pipeline: pipeline)
        let now = store.clock.now
        try await store.database.write { db in
            if replace {
                try db.execute(
                    sql: "DELETE FROM registrations WHERE pipeline = ? AND user_id = ? AND token_kind = ? AND scope = ? AND token <> ?",
                    arguments: .storable([pipeline, token.user, token.kind, token.scope, token.value])
                )
            }
            try db.execute(
                sql: """
                    INSERT INTO registrations (pipeline, user_id, token_kind, token, scope, environment, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (pipeline, user_id, token_kind, token)
                    DO UPDATE SET updated_at = excluded.updated_at, scope = excluded.scope, environment = excluded.environment
                    """,
                arguments: .storable([pipeline, token.user, token.kind, token.value, token.scope, environment, now, now])
            )
            if let keepingAtMost { try SQLiteStore.evict(beside: token, pipeline: pipeline, keeping: keepingAtMost, in: db) }
        }
    }

    func readTokens(user: String?, kind: String) async throws -> [DeviceToken] {
        try await store.read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: user == nil ? Self.everyUsersTokens : Self.usersTokens),
                arguments: user.map { [pipeline, $0, kind] } ?? [pipeline, kind]
            ).map(SQLiteStore.token)
        }
    }

    private static let usersTokens = """
        SELECT user_id, token_kind, token, scope, updated_at FROM registrations
        WHERE pipeline = ? AND user_id = ? AND token_kind = ? ORDER BY updated_at DESC
        """
    private static let everyUsersTokens = """
        SELECT user_id, token_kind, token, scope, updated_at FROM registrations
        WHERE pipeline = ? AND token_kind = ? ORDER BY user_id, updated_at DESC
        """

    func tokens(kind: String, users: ClosedRange<String>) async throws -> [DeviceToken] {
        try await store.database.read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT user_id, token_kind, token, scope, updated_at FROM registrations
                        WHERE pipeline = ? AND user_id >= ? AND user_id <= ? AND token_kind = ? ORDER BY user_id, updated_at DESC
                        """
                ),
                arguments: [pipeline, users.lowerBound, users.upperBound, kind]
            ).map(SQLiteStore.token)
        }
    }

    func users(after: String?, limit: Int) async throws -> [String] {
        try await store.database.read { db in
            try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT DISTINCT user_id FROM registrations WHERE pipeline = ? AND user_id > ? ORDER BY user_id LIMIT ?
                        """
                ),
                arguments: [pipeline, after ?? "", limit]
            )
        }
    }

    func isRegistered(user: String) async throws -> Bool {
        try await store.database.read { db in
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM registrations WHERE pipeline = ? AND user_id = ?)"),
                arguments: [pipeline, user]
            ) ?? false
        }
    }

    func users() async throws -> [String] {
        try await store.database.read { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT user_id FROM registrations WHERE pipeline = ? ORDER BY user_id", arguments: [pipeline])
        }
    }

    func users(token: String, kind: String?) async throws -> [String] {
        try await store.database.read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT user_id FROM registrations WHERE pipeline = ? AND token = ?\(kind == nil ? "" : " AND token_kind = ?") ORDER BY
                    user_id
                    """,
                arguments: kind.map { [pipeline, token, $0] } ?? [pipeline, token]
            )
        }
    }

    func removeToken(kind: String, token: String, unlessUpdatedAfter: Double?) async throws -> Bool {
        defer { store.tokenCache.invalidate() }
        return try await store.database.write { db in
            try db.execute(
                sql: """
                    DELETE FROM registrations WHERE pipeline = ? AND token_kind = ? AND token = ? AND updated_at <= ?
                    """,
                arguments: [pipeline, kind, token, unlessUpdatedAfter ?? Double.greatestFiniteMagnitude]
            )
            return db.changesCount > 0
        }
    }

    func setting(user: String, key: String) async throws -> JSON? {
        let text = try await store.read { db in
            try String.fetchOne(
                db.cachedStatement(sql: "SELECT value FROM settings WHERE pipeline = ? AND user_id = ? AND key = ?"),
                arguments: [pipeline, user, key]
            )
        }
        return try text.map { try JSON.parse($0) }
    }

    func settings(user: String) async throws -> [String: JSON] {
        let rows: [(String, String)] = try await store.read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: "SELECT key, value FROM settings WHERE pipeline = ? AND user_id = ?"),
                arguments: [pipeline, user]
            )
            .map { ($0["key"], $0["value"]) }
        }
        return try [String: JSON](parsing: rows)
    }

    func settings(users: ClosedRange<String>, keys: [String]) async throws -> [String: [String: JSON]] {
        guard !keys.isEmpty else { return [:] }
        let marks = Array(repeating: "?", count: keys.count).joined(separator: ", ")
        let rows: [(String, String, String)] = try await store.read { [pipeline] db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: "SELECT user_id, key, value FROM settings WHERE pipeline = ? AND user_id >= ? AND user_id <= ? AND key IN (\(marks))"
                ),
                arguments: StatementArguments([pipeline, users.lowerBound, users.upperBound] + keys)
            )
            .map { ($0["user_id"], $0["key"], $0["value"]) }
        }
        var settings: [String: [String: JSON]] = [:]
        for (user, key, value) in rows { settings[user, default: [:]][key] = try JSON.parse(value) }
        return settings
    }

    func settingTexts(keys: [String], limit: Int) async throws -> Set<String> {
        guard !keys.isEmpty else { return [] }
        let marks = Array(repeating: "?", count: keys.count).joined(separator: ", ")
        let values: [String] = try await store.read { [pipeline] db in
            try String.fetchAll(
                db.cachedStatement(sql: "SELECT DISTINCT value FROM settings WHERE pipeline = ? AND key IN (\(marks)) ORDER BY value LIMIT ?"),
                arguments: StatementArguments([pipeline] + keys) + [limit]
            )
        }
        return Set(values.compactMap { (try? JSON.parse($0))?.stringValue })
    }

    func setSettings(_ values: [String: JSON], user: String) async throws {
        let now = store.clock.now
        try await store.database.write { db in
            for (key, value) in values {
                try db.execute(
                    sql: """
                        INSERT INTO settings (pipeline, user_id, key, value, updated_at) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (pipeline, user_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                        """,
                    arguments: .storable([pipeline, user, key, value.compactText, now])
                )
            }
        }
    }

    func history(user: String, limit: Int, before: Int64?) async throws -> [HistoryEntry] {
        let rows = try await store.database.read { db in
            try SQLiteStore.userRows(.history, pipeline: pipeline, user: user, before: before ?? Int64.max, limit: limit, in: db)
        }
        return try rows.map { row in
            HistoryEntry(
                id: row["id"],
                pipeline: pipeline,
                user: user,
                eventID: row["event_id"],
                createdAt: row["created_at"],
                record: try JSON.parse(row["record"] as String)
            )
        }
    }

    func lastDelivery(user: String) async throws -> DeliveryRow? {
        try await store.database.read { db in
            guard let row = try SQLiteStore.userRows(.delivered, pipeline: pipeline, user: user, before: Int64.max, limit: 1, in: db).first else {
                return nil
            }
            // The transport is the pipeline's, not a column of the row.
            let delivery = Delivery(
                user: user,
                tokenKind: row["token_kind"],
                token: row["token"],
                transport: "",
                outcome: .delivered,
                providerID: row["provider_id"],
                attempts: row["attempts"],
                reason: row["reason"],
                at: row["created_at"]
            )
            return DeliveryRow(eventID: row["event_id"], delivery: delivery)
        }
    }
}
