import Logging
import NIOSSL
import PostgresNIO
import PushPipeCore

extension PostgresLocation {
    /// The pool's configuration: TLS, pool size and the statement timeout from the URL.
    public var clientConfiguration: PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: hostAddress ?? host,
            port: port,
            username: user,
            password: password,
            database: database,
            tls: tls.clientTLS
        )
        configuration.options.maximumConnections = poolSize
        if hostAddress != nil { configuration.options.tlsServerName = host }
        configuration.options.connectTimeout = .seconds(Int64(connectTimeout))
        configuration.options.additionalStartupParameters = startupParameters
        // A half-open connection (the server or the network gone without a word): PostgresNIO
        // sets no TCP keepalive, so an idle connection runs `SELECT 1` every 30 s and one that
        // gets no answer is closed; a busy one is closed by its statement's bound.
        configuration.options.keepAliveBehavior = .init(frequency: .seconds(30))
        return configuration
    }

    private var startupParameters: [(String, String)] { [("statement_timeout", "\(statementTimeout)s")] }

    /// Runs `body` on one connection of its own, opened and closed around it: migrations and
    /// administration. Unlike a pool, which retries a failing connection for a minute before
    /// a waiting statement learns anything, it fails within `connect_timeout` and with the
    /// reason (refused, authentication, a certificate that does not verify).
    public func withConnection<Result: Sendable>(logger: Logger, _ body: (PostgresConnection) async throws -> Result) async throws -> Result {
        var configuration = PostgresConnection.Configuration(
            host: hostAddress ?? host,
            port: port,
            username: user,
            password: password,
            database: database,
            tls: try tls.connectionTLS
        )
        configuration.options.connectTimeout = .seconds(Int64(connectTimeout))
        configuration.options.additionalStartupParameters = startupParameters
        if hostAddress != nil { configuration.options.tlsServerName = host }
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
        } catch {
            throw StoreConnectionError(location: self, cause: error)
        }
        do {
            let result = try await body(connection)
            try await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }
}
