import Logging
import PostgresNIO

extension PostgresClient {
    /// Runs `body` with a pool that lives only as long as it: migrations, administration and
    /// tests that need a connection for a moment. Its failures reach the caller as thrown
    /// errors, so the pool's own log (a lease asked for an instant before its run loop has
    /// started, reconnections) is kept to errors.
    public static func withShortLived<Result: Sendable>(
        configuration: PostgresClient.Configuration, logger: Logger,
        _ body: @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        var quiet = logger
        quiet.logLevel = max(logger.logLevel, .error)
        let client = PostgresClient(configuration: configuration, backgroundLogger: quiet)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}
