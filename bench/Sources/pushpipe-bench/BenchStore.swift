import ArgumentParser
import Logging
import PushPipeCore
import PushPipePostgres
import PushPipeSQLite

/// The store a benchmark measures: a new SQLite file in its scratch folder, or an empty
/// PostgreSQL database given by URL, on this machine only.
enum BenchStore {
    static func open(_ url: String?, directory: String, logger: Logger) async throws -> any Store {
        guard let url else { return try SQLiteStore(path: "\(directory)/state.sqlite") }
        let postgres = try PostgresLocation(parsing: url)
        guard postgres.host == "127.0.0.1" || postgres.host == "localhost" else {
            throw ValidationError("benchmarks only use a PostgreSQL server on 127.0.0.1")
        }
        return try await PostgresStore(location: postgres, logger: logger)
    }
}
