import Foundation
import Logging
import PostgresNIO
import PushPipeCore
import ServiceLifecycle

/// The store on PostgreSQL: the same `Store` as the embedded SQLite one, for daemons that
/// share a database. Outcomes, history, watermarks and queued events are group-committed
/// as in SQLite (one transaction for the writes that arrive together); reads and
/// registrations are single statements on a pooled `PostgresClient`.
public final class PostgresStore: Store {
    /// Every statement's way to the database, bounded in time (see `Waits`).
    let connections: PostgresConnections
    let logger: Logger
    let outcomes: GroupCommit<OutcomeWrite>
    /// Recipients are read once per event: cached for a second by default (`tokenLifetime`),
    /// which is how soon another daemon's registration is used here (this daemon's own
    /// changes clear it at once).
    let tokenCache: TokenCache
    /// Tokens marked confirmed already: their deliveries write nothing more (`ConfirmedTokens`).
    let confirmations = ConfirmedTokens()

    /// Connects, and migrates the database to the latest version (once, whatever the number
    /// of daemons starting together: they wait on an advisory lock). The migration's own
    /// connection fails the start at once with the reason, where the pool would retry. The
    /// store runs its pool until `close`, after the pipelines drained.
    public init(
        location: PostgresLocation,
        logger: Logger,
        observers: StoreObservers = StoreObservers(),
        tokenLifetime: Duration = .seconds(1)
    ) async throws {
        tokenCache = TokenCache(lifetime: tokenLifetime)
        try await location.withConnection(logger: logger) { connection in try await Self.migrate(connection, logger: logger) }
        // The pool tells each failed reconnection at info: during an outage, the store's own
        // two lines say it (one when it begins, one when it ends). Debug shows them all.
        var poolLogger = logger
        if poolLogger.logLevel == .info { poolLogger.logLevel = .notice }
        let configuration = location.clientConfiguration
        let pool = PostgresPool { [poolLogger] in PostgresClient(configuration: configuration, backgroundLogger: poolLogger) }
        self.logger = logger
        var quiet = logger
        quiet.logLevel = .critical
        let connections = PostgresConnections(pool: pool, waits: location.waits, logger: logger) { [quiet] in
            (try? await location.withConnection(logger: quiet) { _ in true }) ?? false
        }
        self.connections = connections
        outcomes = Self.groupCommit(connections: connections, confirmations: confirmations, logger: logger)
        if let commits = observers.commits { observeCommits(commits) }
    }

    /// The task that leads a commit carries other tasks' writes: other pipelines' outcomes, other
    /// callers' accepted events. So the transaction runs in a task of its own, which the
    /// leader's cancellation (a pipeline stopping at its drain timeout) does not reach: the
    /// pool refuses a connection to a cancelled task, which would fail the whole batch.
    private static func groupCommit(connections: PostgresConnections, confirmations: ConfirmedTokens, logger: Logger) -> GroupCommit<OutcomeWrite> {
        GroupCommit { writes in
            let marks = confirmations.unmarked(in: writes)
            try await uncancelled {
                if marks.isEmpty, let outcomeRows = Self.outcomesOnly(writes) {
                    try await connections.withConnection { connection in
                        _ = try await connection.query(outcomeRows.statement, logger: logger).collect()
                    }
                    return
                }
                try await connections.transaction { connection in
                    try await Self.commit(writes, on: connection, logger: logger)
                    try await Self.markConfirmed(marks, on: connection, logger: logger)
                }
            }
            confirmations.remember(marks)
        }
    }

    /// Now, in UNIX seconds, on the database's clock: leases, holds and due checks are shared
    /// by daemons whose own clocks may disagree, so they are all measured on this one.
    static let databaseNow = "extract(epoch from now())::double precision"
    /// The database's time as a row is written, for a lease's end: `now()` is when the
    /// transaction began, however long its statements then waited for locks.
    static let databaseClock = "extract(epoch from clock_timestamp())::double precision"

    public func ping() async throws {
        _ = try await connections.rows("SELECT 1")
    }

    public func observeCommits(_ observer: @escaping @Sendable (Duration) -> Void) {
        outcomes.observer.withLock { $0 = CommitObserver(observe: observer) }
    }

    public func close() async throws {
        await connections.pool.shutdown()
    }

    static func tokens(_ rows: [PostgresRow]) throws -> [DeviceToken] {
        try rows.decode((String, String, String, String, Double).self).map { user, kind, value, scope, updatedAt in
            DeviceToken(user: user, kind: kind, value: value, scope: scope, updatedAt: updatedAt)
        }
    }
}

extension PostgresPipelineStore {
    func register(_ token: DeviceToken, environment: String?, replace: Bool, keepingAtMost: Int?) async throws {
        defer { store.tokenCache.invalidate() }
        store.confirmations.forget(token, pipeline: pipeline)
        let now = Date().timeIntervalSince1970
        try await store.connections.transaction { connection in
            if replace {
                try await connection.query(
                    """
                    DELETE FROM registrations WHERE pipeline = \(pipeline) AND user_id = \(token.user) AND token_kind = \(token.kind)
                    AND scope = \(token.scope) AND token <> \(token.value)
                    """,
                    logger: store.logger
                )
            }
            try await connection.query(
                """
                INSERT INTO registrations (pipeline, user_id, token_kind, token, scope, environment, created_at, updated_at)
                VALUES (\(pipeline), \(token.user), \(token.kind), \(token.value), \(token.scope), \(environment), \(now), \(now))
                ON CONFLICT (pipeline, user_id, token_kind, token)
                DO UPDATE SET updated_at = excluded.updated_at, scope = excluded.scope, environment = excluded.environment
                """,
                logger: store.logger
            )
            if let keepingAtMost {
                try await PostgresStore.evict(beside: token, pipeline: pipeline, keeping: keepingAtMost, on: connection, logger: store.logger)
            }
        }
    }

    func readTokens(user: String?, kind: String) async throws -> [DeviceToken] {
        let rows =
            if let user {
                try await store.connections.rows(
                    """
                    SELECT user_id, token_kind, token, scope, updated_at FROM registrations
                    WHERE pipeline = \(pipeline) AND user_id = \(user) AND token_kind = \(kind) ORDER BY updated_at DESC, token
                    """
                )
            } else {
                try await store.connections.rows(
                    """
                    SELECT user_id, token_kind, token, scope, updated_at FROM registrations
                    WHERE pipeline = \(pipeline) AND token_kind = \(kind) ORDER BY user_id, updated_at DESC
                    """
                )
            }
        return try await PostgresStore.tokens(rows)
    }

    func tokens(kind: String, users: ClosedRange<String>) async throws -> [DeviceToken] {
        try await PostgresStore.tokens(
            store.connections.rows(
                """
                SELECT user_id, token_kind, token, scope, updated_at FROM registrations
                WHERE pipeline = \(pipeline) AND user_id >= \(users.lowerBound) AND user_id <= \(users.upperBound) AND token_kind = \(kind)
                ORDER BY user_id, updated_at DESC
                """
            )
        )
    }

    func isRegistered(user: String) async throws -> Bool {
        try await store.connections.rows("SELECT EXISTS (SELECT 1 FROM registrations WHERE pipeline = \(pipeline) AND user_id = \(user))")
            .first?.decode(Bool.self) ?? false
    }

    func users() async throws -> [String] {
        try await store.connections.rows("SELECT DISTINCT user_id FROM registrations WHERE pipeline = \(pipeline) ORDER BY user_id").decode(
            String.self
        )
    }

    func users(after: String?, limit: Int) async throws -> [String] {
        try await store.connections.rows(
            """
            SELECT DISTINCT user_id FROM registrations WHERE pipeline = \(pipeline) AND user_id > \(after ?? "") ORDER BY user_id LIMIT \(limit)
            """
        ).decode(String.self)
    }

    func users(token: String, kind: String?) async throws -> [String] {
        try await store.connections.rows(
            """
            SELECT DISTINCT user_id FROM registrations WHERE pipeline = \(pipeline) AND token = \(token)
            AND (\(kind)::text IS NULL OR token_kind = \(kind)) ORDER BY user_id
            """
        ).decode(String.self)
    }

    func removeToken(kind: String, token: String, unlessUpdatedAfter: Double?) async throws -> Bool {
        defer { store.tokenCache.invalidate() }
        return try await !store.connections.rows(
            """
            DELETE FROM registrations WHERE pipeline = \(pipeline) AND token_kind = \(kind) AND token = \(token)
            AND updated_at <= \(unlessUpdatedAfter ?? Double.greatestFiniteMagnitude) RETURNING user_id
            """
        ).isEmpty
    }

    func setting(user: String, key: String) async throws -> JSON? {
        try await store.connections.rows("SELECT value FROM settings WHERE pipeline = \(pipeline) AND user_id = \(user) AND key = \(key)")
            .first.map { try JSON.parse($0.decode(String.self)) }
    }

    func settings(user: String) async throws -> [String: JSON] {
        try await [String: JSON](
            parsing: store.connections.rows("SELECT key, value FROM settings WHERE pipeline = \(pipeline) AND user_id = \(user)")
                .decode((String, String).self)
        )
    }

    func settings(users: ClosedRange<String>, keys: [String]) async throws -> [String: [String: JSON]] {
        let rows = try await store.connections.rows(
            """
            SELECT user_id, key, value FROM settings WHERE pipeline = \(pipeline) AND user_id >= \(users.lowerBound)
            AND user_id <= \(users.upperBound) AND key = ANY(\(keys))
            """
        ).decode((String, String, String).self)
        var settings: [String: [String: JSON]] = [:]
        for (user, key, value) in rows { settings[user, default: [:]][key] = try JSON.parse(value) }
        return settings
    }

    func settingTexts(keys: [String], limit: Int) async throws -> Set<String> {
        let rows = try await store.connections.rows(
            "SELECT DISTINCT value FROM settings WHERE pipeline = \(pipeline) AND key = ANY(\(keys)) ORDER BY value LIMIT \(limit)"
        ).decode(String.self)
        return Set(rows.compactMap { (try? JSON.parse($0))?.stringValue })
    }

    func setSettings(_ values: [String: JSON], user: String) async throws {
        let now = Date().timeIntervalSince1970
        try await store.connections.transaction { connection in
            for (key, value) in values {
                try await connection.query(
                    """
                    INSERT INTO settings (pipeline, user_id, key, value, updated_at) VALUES (\(pipeline), \(user), \(key), \(value.compactText),
                    \(now))
                    ON CONFLICT (pipeline, user_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                    """,
                    logger: store.logger
                )
            }
        }
    }

    func states(stage: String, keys: [String]) async throws -> [String: JSON] {
        guard !keys.isEmpty else { return [:] }
        let rows = try await store.connections.rows(
            """
            SELECT key, value FROM stage_state WHERE pipeline = \(pipeline) AND stage = \(stage) AND key = ANY(\(keys))
            """
        )
        return try [String: JSON](parsing: rows.decode((String, String).self))
    }

    func pruneStates(stage: String, unchangedSince cutoff: Double, limit: Int) async throws -> Int {
        try await store.connections.rows(
            """
            DELETE FROM stage_state WHERE pipeline = \(pipeline) AND stage = \(stage) AND key IN (
                SELECT key FROM stage_state WHERE pipeline = \(pipeline) AND stage = \(stage) AND updated_at < \(cutoff) LIMIT \(limit))
            RETURNING key
            """
        ).count
    }
}
