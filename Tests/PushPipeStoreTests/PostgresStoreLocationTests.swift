import Foundation
import Logging
import PostgresNIO
import PushPipePostgres
import PushPipePostgresTesting
import PushPipeStores
import PushPipeTesting
import Testing

/// What a `postgres://` store location sets, and what the store refuses.
@Suite struct PostgresStoreLocationTests {
    @Test func poolSizeAndStatementTimeoutComeFromTheURL() throws {
        guard case .postgres(let location) = try StoreLocation(parsing: "postgres://p@db:5432/p?sslmode=disable&pool_size=4&statement_timeout=5")
        else {
            Issue.record("not a PostgreSQL location")
            return
        }
        #expect(location.poolSize == 4 && location.statementTimeout == 5)
        let configuration = location.clientConfiguration
        #expect(configuration.options.maximumConnections == 4)
        #expect(configuration.options.additionalStartupParameters.map { "\($0.0)=\($0.1)" } == ["statement_timeout=5s"])
        guard case .postgres(let defaults) = try StoreLocation(parsing: "postgres://p@db/p") else { return }
        #expect(defaults.poolSize == 20 && defaults.statementTimeout == 30)
        for bad in ["pool_size=0", "pool_size=many", "statement_timeout=-1"] {
            #expect(throws: InvalidLocation.self, "\(bad) is refused") { try StoreLocation(parsing: "postgres://p@db/p?\(bad)") }
        }
    }

    /// A database a newer pushpipe migrated is refused with a reason, not used half-understood.
    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func aDatabaseMigratedByANewerVersionIsRefused() async throws {
        let location = try await TestStores.freshPostgresDatabase()
        let logger = Logger(label: "test")
        let store = try await PostgresStore(location: location, logger: logger)
        try await store.close()
        try await location.withConnection(logger: logger) { connection in
            _ = try await connection.query("INSERT INTO pushpipe_migrations (name) VALUES ('v99-from-the-future')", logger: logger)
        }
        await #expect(throws: PostgresStore.NewerDatabaseError.self) {
            try await PostgresStore(location: location, logger: logger)
        }
    }
}
