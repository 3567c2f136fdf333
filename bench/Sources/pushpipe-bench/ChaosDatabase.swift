import Foundation
import Logging
import PostgresNIO
import PushPipeCore
import PushPipePostgres
import PushPipePostgresTesting
import PushPipeSQLite
import PushPipeTesting

/// The chaos soak's hand on the database server: it cuts the daemons' connections, takes the
/// soak's database away for a while, and counts what is left in it at the end. It works
/// through the server's maintenance database, which the outage does not touch.
struct ChaosDatabase: Sendable {
    let away: DatabaseOutage
    let soak: PostgresClient
    let database: String
    let logger = Logger(label: "chaos")

    init(url: String) throws {
        let location = try PostgresLocation(parsing: url)
        away = try DatabaseOutage(url: url)
        let soakLocation = location
        soak = PostgresClient(configuration: soakLocation.clientConfiguration, backgroundLogger: logger)
        database = location.database
    }

    func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await away.run() }
            group.addTask { await soak.run() }
        }
    }

    func terminateBackends() async throws { try await away.terminateBackends() }

    /// No connection to the soak's database for `seconds`: new ones are refused, open ones cut.
    func outage(seconds: Double) async throws {
        FileHandle.standardError.write(Data("chaos: database outage for \(Int(seconds)) s\n".utf8))
        try await away.begin()
        try await Task.sleep(for: .seconds(seconds))
        try await away.end()
        FileHandle.standardError.write(Data("chaos: database back\n".utf8))
    }

    /// Rows of accepted events still queued, and holds not lapsed, after the final drain.
    func leftovers() async throws -> (queued: Int, holds: Int) {
        let queued =
            try await soak.query("SELECT count(*) FROM work WHERE kind LIKE 'event:%'", logger: logger).collect().first?.decode(Int.self) ?? -1
        let holds =
            try await soak.query("SELECT count(*) FROM work WHERE kind LIKE 'hold:%' AND lease_until > extract(epoch from now())", logger: logger)
            .collect().first?.decode(Int.self) ?? -1
        return (queued, holds)
    }
}
