import Foundation
import Logging
import PostgresNIO

/// Where the daemon keeps its state: `sqlite:PATH` (the default, one machine) or
/// `postgres://user:password@host:port/database?sslmode=...` (several daemons on one database).
/// `description` never shows the password: the location ends up in logs.
public enum StoreLocation: Sendable, Equatable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(PostgresLocation)

    public struct PostgresLocation: Sendable, Equatable {
        public var host: String
        /// libpq's `hostaddr`: the address to connect to, while `host` stays the name the
        /// server's certificate is verified against (`verify-full`).
        public var hostAddress: String?
        public var port: Int
        public var user: String
        public var password: String?
        public var database: String
        /// `sslmode` and `sslrootcert`, as libpq means them.
        public var tls: PostgresTLSMode
        /// The most connections this daemon opens (`pool_size`, 20): the database's
        /// `max_connections` must cover every daemon's pool.
        public var poolSize = 20
        /// The longest a statement may run on the server (`statement_timeout`, seconds, 30): a
        /// commit stuck behind a lock fails and is retried instead of holding every writer.
        public var statementTimeout = 30
        /// The longest the store waits for a connection (`connect_timeout`, seconds, 5, as
        /// libpq means it): past it the store is taken for unavailable and new events get 503.
        public var connectTimeout = 5

        /// The store's bounds: an answer may take the server's statement timeout and a margin.
        public var waits: PostgresStore.Waits {
            PostgresStore.Waits(connection: .seconds(connectTimeout), answer: .seconds(statementTimeout + 5))
        }
    }

    public struct InvalidLocation: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    public init(parsing text: String) throws {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else { throw InvalidLocation(description: "sqlite: needs a file path, e.g. sqlite:var/pushpipe.sqlite") }
            self = .sqlite(path: path)
            return
        }
        guard text.hasPrefix("postgres://") || text.hasPrefix("postgresql://"), let url = URLComponents(string: text), let host = url.host,
              !host.isEmpty, let user = url.user, !user.isEmpty else {
            throw InvalidLocation(description: "a store is sqlite:PATH or postgres://user[:password]@host[:port]/database[?sslmode=...]")
        }
        let database = String(url.path.drop { $0 == "/" })
        let tls = try PostgresTLSMode(sslmode: url.queryItems?.first { $0.name == "sslmode" }?.value,
                                      sslrootcert: url.queryItems?.first { $0.name == "sslrootcert" }?.value)
        var location = PostgresLocation(host: host, hostAddress: url.queryItems?.first { $0.name == "hostaddr" }?.value, port: url.port ?? 5432, user: user, password: url.password,
                                        database: database.isEmpty ? user : database, tls: tls)
        location.poolSize = try Self.count(url, "pool_size", in: 1...1000) ?? location.poolSize
        location.statementTimeout = try Self.count(url, "statement_timeout", in: 1...86400) ?? location.statementTimeout
        location.connectTimeout = try Self.count(url, "connect_timeout", in: 1...600) ?? location.connectTimeout
        self = .postgres(location)
    }

    /// A whole number from the URL's query, within `range`.
    private static func count(_ url: URLComponents, _ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let text = url.queryItems?.first(where: { $0.name == name })?.value else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw InvalidLocation(description: "\(name) '\(text)' is not a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    public var description: String {
        switch self {
        case .sqlite(let path): "sqlite:\(path)"
        case .postgres(let location):
            "postgres://\(location.user)\(location.password == nil ? "" : ":•••")@\(location.host):\(location.port)/\(location.database)?\(location.tls)"
        }
    }

    public var isPostgres: Bool {
        if case .postgres = self { return true }
        return false
    }

    /// Opens (and migrates) the store. The PostgreSQL store runs its pool itself until it is
    /// closed: a daemon closes it after its service group ended, once the pipelines drained.
    public func open(logger: Logger) async throws -> any Store {
        switch self {
        case .sqlite(let path):
            return try SQLiteStore(path: path)
        case .postgres(let location):
            return try await PostgresStore(location: location, logger: logger)
        }
    }
}
