import Foundation
import Logging
import PostgresNIO
import PushPipe

/// The chaos soak's hand on the database server: it cuts the daemons' connections, takes the
/// soak's database away for a while, and counts what is left in it at the end. It works
/// through the server's maintenance database, which the outage does not touch.
struct ChaosDatabase: Sendable {
    let client: PostgresClient
    let soak: PostgresClient
    let database: String
    let logger = Logger(label: "chaos")

    init(server: String, database: String) throws {
        guard case .postgres(let location) = try StoreLocation(parsing: server) else { throw StoreLocation.InvalidLocation(description: "not postgres") }
        client = PostgresClient(configuration: location.clientConfiguration, backgroundLogger: logger)
        var soakLocation = location
        soakLocation.database = database
        soak = PostgresClient(configuration: soakLocation.clientConfiguration, backgroundLogger: logger)
        self.database = database
    }

    func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            group.addTask { await soak.run() }
        }
    }

    func terminateBackends() async throws {
        try await client.query("""
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = \(database) AND pid <> pg_backend_pid()
            """, logger: logger).collect()
    }

    /// No connection to the soak's database for `seconds`: new ones are refused, open ones cut.
    func outage(seconds: Double) async throws {
        FileHandle.standardError.write(Data("chaos: database outage for \(Int(seconds)) s\n".utf8))
        try await client.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \(database) ALLOW_CONNECTIONS false"), logger: logger).collect()
        try await terminateBackends()
        try await Task.sleep(for: .seconds(seconds))
        try await client.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \(database) ALLOW_CONNECTIONS true"), logger: logger).collect()
        FileHandle.standardError.write(Data("chaos: database back\n".utf8))
    }

    /// Rows of accepted events still queued, and holds not lapsed, after the final drain.
    func leftovers() async throws -> (queued: Int, holds: Int) {
        let queued = try await soak.query("SELECT count(*) FROM queued_events", logger: logger).collect().first?.decode(Int.self) ?? -1
        let holds = try await soak.query("SELECT count(*) FROM stage_holds WHERE until > extract(epoch from now())", logger: logger)
            .collect().first?.decode(Int.self) ?? -1
        return (queued, holds)
    }
}
