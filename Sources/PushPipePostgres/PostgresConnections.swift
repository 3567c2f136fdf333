import Logging
import NIOCore
import PostgresNIO
import PushPipeCore
import Synchronization

/// The store's way to the database: every statement goes through here, so every one waits a
/// bounded time for a connection and an answer, and tells `availability` what it found.
struct PostgresConnections: Sendable {
    let pool: PostgresPool
    let waits: PostgresStore.Waits
    let availability: StoreAvailability
    let logger: Logger
    /// Opens and closes one connection outside the pool: whether the database accepts them.
    let connectsDirectly: @Sendable () async -> Bool
    let name = "PostgreSQL"
    /// Connections closed under a statement end it (see `ConnectionCloseWatch`).
    let closes = ConnectionCloseWatch()

    init(pool: PostgresPool, waits: PostgresStore.Waits, logger: Logger, connectsDirectly: @escaping @Sendable () async -> Bool) {
        self.pool = pool
        self.waits = waits
        self.logger = logger
        self.connectsDirectly = connectsDirectly
        availability = StoreAvailability(name: name, logger: logger, probeLimit: waits.connection + waits.answer + .seconds(5))
    }

    /// Runs `body` on a pooled connection within the store's waits, and keeps `availability`.
    func withConnection<Result: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        let probe = try availability.admit()
        do {
            let result = try await bounded(body)
            availability.answered(probe: probe)
            return result
        } catch is CancellationError {
            availability.abandoned(probe: probe)
            throw CancellationError()
        } catch {
            guard Self.meansUnavailable(error) else {
                availability.answered(probe: probe)
                throw Self.dataError(in: error) ?? error
            }
            availability.failed(error, probe: probe)
            if probe, let timeout = error as? StoreTimeoutError, timeout.what == "connection" { await replacePoolIfWedged() }
            // One error for every way of not reaching the database, which the host answers with 503.
            if error is StoreTimeoutError { throw error }
            throw StoreUnavailableError(store: name, failingFor: .zero, cause: String(describing: error))
        }
    }

    /// A probe got no connection from the pool: if the database has been away for a while
    /// yet accepts a connection of ours, the pool is not coming back by itself.
    private func replacePoolIfWedged() async {
        guard let failing = availability.failingFor, failing >= waits.connection * 3, await connectsDirectly() else { return }
        if pool.replace(ifOlderThan: waits.connection * 6) {
            logger.notice(
                "store: the pool gave no connection for \(failing.roundedSeconds) s while PostgreSQL accepts new ones: a new pool replaces it"
            )
        }
    }

    /// Fails at once while the store is failing. A read ahead of many lookups (`warmTokens`,
    /// `settings(of:)`) must not be the statement that waits to learn an outage has ended:
    /// each lookup after it would wait again.
    func refuseReadAheadDuringAnOutage() throws {
        if let failing = availability.failingFor { throw StoreUnavailableError(store: name, failingFor: failing) }
    }

    /// The rows of one statement.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await withConnection { [logger] connection in try await connection.query(query, logger: logger).collect() }
    }

    /// A transaction: `BEGIN`, the body, `COMMIT` (or `ROLLBACK` when it throws).
    func transaction<Result: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        try await withConnection { [logger] connection in try await connection.withTransaction(logger: logger) { try await body($0) } }
    }

    private func bounded<Result: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        try await BoundedStatement<Result>(waits: waits, store: name, closes: closes).run(on: pool.client, body)
    }

    /// The server refused the statement's data: a value it cannot take (SQLSTATE class 22,
    /// `\u0000` in `jsonb` among them), a broken constraint (23) or a limit exceeded (54, an
    /// index entry too large). The same statement fails the same way again, so it is told as
    /// such, once, here, and nothing retries it.
    static func dataError(in error: any Error) -> StoreDataError? {
        switch error {
        case let error as PSQLError:
            guard error.code == .server, let state = error.serverInfo?[.sqlState], ["22", "23", "54"].contains(String(state.prefix(2))) else {
                return nil
            }
            return StoreDataError(store: "PostgreSQL", code: state, message: error.serverInfo?[.message] ?? "")
        case let error as PostgresTransactionError:
            // The body's error, or a deferred constraint's at COMMIT.
            return [error.closureError, error.commitError].lazy.compactMap { $0.flatMap(dataError) }.first
        default:
            return nil
        }
    }

    /// Whether an error says the database cannot be reached (as opposed to an answer it gave).
    static func meansUnavailable(_ error: any Error) -> Bool {
        switch error {
        case is StoreTimeoutError, is StoreUnavailableError, is ConnectionClosedDuringStatement: return true
        case let error as PSQLError:
            guard error.code == .server else { return error.code != .queryCancelled }
            // The server itself going away: connection exceptions (08), an administrator's or a
            // crash's shutdown (57, but a cancelled statement, 57014), too many connections (53).
            let state = error.serverInfo?[.sqlState] ?? ""
            return state != "57014" && ["08", "57", "53"].contains(String(state.prefix(2)))
        case let error as PostgresTransactionError:
            return [error.beginError, error.closureError, error.commitError, error.rollbackError].contains { $0.map(meansUnavailable) ?? false }
        case is CancellationError: return false
        default: return String(reflecting: type(of: error)).contains("ConnectionPool") || error is IOError || error is ChannelError
        }
    }
}

extension PostgresStore {
    /// How long the store waits on the database before it calls it unavailable.
    public struct Waits: Sendable {
        /// For a connection from the pool (`connect_timeout`): during an outage the pool keeps
        /// reconnecting, and without a bound every caller would wait on it.
        public var connection: Duration = .seconds(5)
        /// For an answer on a connection (the server's `statement_timeout` and a margin): past
        /// it the connection is taken for half-open and closed, which fails its query, instead
        /// of stalling the commit leader while TCP never notices.
        public var answer: Duration = .seconds(35)
    }
}

extension Array where Element == PostgresRow {
    /// Each row's columns, as `PostgresRowSequence.decode` gives them.
    func decode<each Column: PostgresDecodable>(_ columns: (repeat each Column).Type) throws -> [(repeat each Column)] {
        try map { try $0.decode(columns) }
    }

    func decode<Column: PostgresDecodable>(_ column: Column.Type) throws -> [Column] {
        try map { try $0.decode(column) }
    }
}
