import Foundation
import Logging
import PostgresNIO
import PushPipeCore
import PushPipePostgres

/// Takes one database of a PostgreSQL server away and brings it back: new connections are
/// refused (`ALLOW_CONNECTIONS false`) and open ones cut, as an outage does to a daemon. It
/// works through the server's maintenance database, which the outage does not touch. Call
/// `run` in a task before the other methods.
public struct DatabaseOutage: Sendable {
    let client: PostgresClient
    public let database: String
    let logger = Logger(label: "database-outage")

    /// - Parameter url: the database's `postgres://` URL (as a daemon's `--store`).
    public init(url: String) throws {
        var location = try PostgresLocation(parsing: url)
        database = location.database
        location.database = "postgres"
        client = PostgresClient(configuration: location.clientConfiguration, backgroundLogger: logger)
    }

    public func run() async { await client.run() }

    /// Cuts every connection to the database (but the maintenance one).
    public func terminateBackends() async throws {
        try await client.query(
            """
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = \(database) AND pid <> pg_backend_pid()
            """,
            logger: logger
        ).collect()
    }

    public func begin() async throws {
        try await client.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \(database) ALLOW_CONNECTIONS false"), logger: logger).collect()
        try await terminateBackends()
    }

    public func end() async throws {
        try await client.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \(database) ALLOW_CONNECTIONS true"), logger: logger).collect()
    }
}
