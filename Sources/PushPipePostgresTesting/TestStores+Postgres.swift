import Foundation
import Logging
import PostgresNIO
import PushPipeCore
import PushPipePostgres
import PushPipeTesting

/// Fresh databases on the test server, in a module of their own so that `PushPipeTesting`
/// (for anyone's stages) depends on no store.
extension TestStores {
    /// A new, empty database on the test server (or on `server`, a `postgres://` URL); returns its location.
    public static func freshPostgresDatabase(on server: String? = nil) async throws -> PostgresLocation {
        guard let url = server ?? postgresURL else { throw InvalidLocation(description: "PUSHPIPE_TEST_POSTGRES_URL is not set") }
        var location = try PostgresLocation(parsing: url)
        let name = "pushpipe_test_\(UUID().uuidString.prefix(8).lowercased())"
        try await location.withConnection(logger: Logger(label: "test-postgres")) { admin in
            _ = try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: Logger(label: "test-postgres"))
        }
        location.database = name
        return location
    }

    /// A store on a new, empty database for `body`, closed after it whatever it throws.
    public static func withFreshPostgresStore<T>(_ body: (PostgresStore) async throws -> T) async throws -> T {
        let store = try await PostgresStore(location: try await freshPostgresDatabase(), logger: Logger(label: "test"))
        return try await withCleanup({ try await body(store) }, cleanup: { try? await store.close() })
    }

    /// A new, empty database as a daemon's `--store` URL (no password, no TLS: the test server).
    public static func freshPostgresURL(on server: String? = nil) async throws -> String {
        let location = try await freshPostgresDatabase(on: server)
        return "postgres://\(location.user)@\(location.host):\(location.port)/\(location.database)?sslmode=disable"
    }
}
