import Logging
import PushPipeCore
import PushPipePostgresTesting
import PushPipeTesting
import Testing

@testable import PushPipePostgres
@testable import PushPipeSQLite

/// The stores a contract runs against, each fresh for each test case: a file of its own, or a
/// database of its own on the test server.
enum StoreBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    /// PostgreSQL when there is a server to test against (`.ci/run` starts one and exports
    /// `PUSHPIPE_TEST_POSTGRES_URL`); without one, the SQLite half alone.
    static var available: [StoreBackend] { TestStores.postgresURL == nil ? [.sqlite] : allCases }

    var testDescription: String { rawValue }

    static let logger = Logger(label: "store-contract")

    func withStore(_ body: (any Store) async throws -> Void) async throws {
        let directory = try TemporaryDirectory("store")
        defer { directory.remove() }
        let store: any Store =
            switch self {
            case .sqlite: try SQLiteStore(path: directory.file("state.sqlite"))
            case .postgres: try await PostgresStore(location: try await TestStores.freshPostgresDatabase(), logger: Self.logger)
            }
        try await withCleanup({ try await body(store) }, cleanup: { try? await store.close() })
    }
}
