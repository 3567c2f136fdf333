import Foundation
import PushPipeCore

/// Where a PostgreSQL store is: `postgres://user:password@host:port/database?sslmode=...`,
/// with libpq's meaning for each part, so a URL that works with `psql` works here.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
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

    /// Never shows the password: the location ends up in logs.
    public var description: String {
        "postgres://\(user)\(password == nil ? "" : ":•••")@\(host):\(port)/\(database)?\(tls)"
    }
}

// In an extension, so that the struct keeps its synthesized memberwise initializer.
extension PostgresLocation {
    /// - Throws: `InvalidLocation` naming what is wrong.
    public init(parsing text: String) throws {
        guard text.hasPrefix("postgres://") || text.hasPrefix("postgresql://"), let url = URLComponents(string: text), let host = url.host,
            !host.isEmpty, let user = url.user, !user.isEmpty
        else {
            throw InvalidLocation(description: "a store is sqlite:PATH or postgres://user[:password]@host[:port]/database[?sslmode=...]")
        }
        let database = String(url.path.drop { $0 == "/" })
        let tls = try PostgresTLSMode(
            sslmode: url.queryItems?.first { $0.name == "sslmode" }?.value,
            sslrootcert: url.queryItems?.first { $0.name == "sslrootcert" }?.value
        )
        self.init(
            host: host,
            hostAddress: url.queryItems?.first { $0.name == "hostaddr" }?.value,
            port: url.port ?? 5432,
            user: user,
            password: url.password,
            database: database.isEmpty ? user : database,
            tls: tls
        )
        poolSize = try Self.count(url, "pool_size", in: 1...1000) ?? poolSize
        statementTimeout = try Self.count(url, "statement_timeout", in: 1...86400) ?? statementTimeout
        connectTimeout = try Self.count(url, "connect_timeout", in: 1...600) ?? connectTimeout
    }

    /// A whole number from the URL's query, within `range`.
    private static func count(_ url: URLComponents, _ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let text = url.queryItems?.first(where: { $0.name == name })?.value else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw InvalidLocation(description: "\(name) '\(text)' is not a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }
}

/// A store location that cannot be used, with what is wrong (never the password).
public struct InvalidLocation: Error, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}
