import Foundation

/// Stores for tests: the PostgreSQL server named by `PUSHPIPE_TEST_POSTGRES_URL` (`.ci/run`
/// starts one; without it PostgreSQL tests skip). `PushPipePostgresTesting` makes databases on it.
public enum TestStores {
    public static var postgresURL: String? {
        ProcessInfo.processInfo.environment["PUSHPIPE_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }
}
