import Foundation
import Logging
import PostgresNIO
import PushPipePostgresTesting
import PushPipeStores
import PushPipeTesting
import Testing

@testable import PushPipePostgres

/// `sslmode` as libpq means it, against a real PostgreSQL with `ssl=on`
/// and a certificate made by the test: `prefer` and `require` encrypt without verifying,
/// `verify-ca` checks the CA, `verify-full` the CA and the host name.
@Suite struct PostgresStoreTLSTests {
    static let logger = Logger(label: "test")

    @Test func modesAndRootCertificatesAreReadAsLibpqReadsThem() throws {
        let directory = try TemporaryDirectory("sslmodes")
        defer { directory.remove() }
        let roots = directory.file("root.pem")
        try TestCertificateAuthority().writeCACertificate(to: roots)
        let garbage = try directory.write("garbage.pem", "not a certificate")
        func tls(_ query: String) throws -> PostgresTLSMode {
            guard case .postgres(let location) = try StoreLocation(parsing: "postgres://p@db/p\(query)") else { throw CancellationError() }
            return location.tls
        }
        #expect(try tls("").mode == .prefer, "libpq's default")
        #expect(try tls("?sslmode=verify-ca") == PostgresTLSMode(sslmode: "verify-ca", sslrootcert: nil))
        #expect(try tls("?sslmode=verify-ca").roots == .system)
        #expect(try tls("?sslmode=require&sslrootcert=\(roots)").mode == .verifyCA, "require with a root file verifies the CA, as in libpq")
        #expect(try tls("?sslmode=prefer&sslrootcert=system").mode == .verifyFull, "sslrootcert=system means verify-full, as in libpq")
        #expect(try tls("?sslmode=verify-full&sslrootcert=\(roots)").roots == .file(roots))
        for bad in ["?sslmode=on", "?sslmode=verify-ca&sslrootcert=\(directory.file("missing.pem"))", "?sslmode=verify-ca&sslrootcert=\(garbage)"] {
            #expect(throws: InvalidLocation.self, "\(bad) is refused when read") { try tls(bad) }
        }
    }

    /// Whether the connection a URL makes is encrypted (the server's own view of it), or the
    /// error connecting gave.
    static func encrypted(_ url: String) async throws -> Bool {
        guard case .postgres(let location) = try StoreLocation(parsing: url) else { throw CancellationError() }
        return try await location.withConnection(logger: logger) { connection in
            try await connection.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", logger: logger).collect().first?.decode(Bool.self)
                ?? false
        }
    }

    @Test(.enabled(if: PostgresServer.binaries != nil, "no PostgreSQL server installed (Debian's postgresql)"))
    func eachModeAgainstAServerWithTLS() async throws {
        let directory = try TemporaryDirectory("postgres-tls")
        defer { directory.remove() }
        // The server's certificate names db.internal, not the address the tests connect to.
        let authority = try TestCertificateAuthority(serverNames: ["db.internal"])
        let ca = directory.file("ca.pem")
        let stranger = directory.file("stranger.pem")
        try authority.writeCACertificate(to: ca)
        try TestCertificateAuthority().writeCACertificate(to: stranger)
        let server = try await PostgresServer.start(tls: .init(certificatePEM: authority.serverCertificatePEM, keyPEM: authority.serverKeyPEM))
        try await withCleanup(
            {
                #expect(try await Self.encrypted(server.url("sslmode=disable")) == false)
                // Neither verifies: a certificate of a CA the client does not know is accepted.
                for mode in ["allow", "prefer", "require"] {
                    #expect(try await Self.encrypted(server.url("sslmode=\(mode)")) == true, "sslmode=\(mode)")
                }
                #expect(try await Self.encrypted(server.url("sslmode=verify-ca&sslrootcert=\(ca)")) == true)
                // libpq's hostaddr: connect to 127.0.0.1, verify the certificate against the name.
                #expect(
                    try await Self.encrypted(
                        "postgres://postgres@db.internal:\(server.port)/postgres?hostaddr=127.0.0.1&sslmode=verify-full&sslrootcert=\(ca)"
                    ) == true
                )
                for refused in [
                    "sslmode=verify-ca&sslrootcert=\(stranger)", "sslmode=require&sslrootcert=\(stranger)",
                    "sslmode=verify-full&sslrootcert=\(ca)",
                ] {
                    let error = await #expect(throws: StoreConnectionError.self, "\(refused) connected") {
                        try await Self.encrypted(server.url(refused))
                    }
                    #expect(
                        error?.description.contains("CERTIFICATE_VERIFY_FAILED") == true || error?.description.contains("certificate") == true,
                        "the reason is told: \(error?.description ?? "")"
                    )
                }
                // The store's pool connects with the same settings as its migration did.
                guard case .postgres(let location) = try StoreLocation(parsing: server.url("sslmode=verify-ca&sslrootcert=\(ca)")) else { return }
                let store = try await PostgresStore(location: location, logger: Self.logger)
                let rows = try await store.connections.rows("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
                #expect(try rows.first?.decode(Bool.self) == true)
                try await store.close()
            },
            cleanup: server.stop
        )
    }

    /// `prefer` falls back to plain text where the server has no TLS; `require` does not.
    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func againstAServerWithoutTLS() async throws {
        let location = try await TestStores.freshPostgresDatabase()
        let plain = "postgres://\(location.user)@\(location.host):\(location.port)/\(location.database)"
        // The shared test server runs without TLS unless its owner turned it on.
        guard try await Self.encrypted(plain + "?sslmode=disable") == false,
            try await Self.encrypted(plain + "?sslmode=prefer") == false
        else { return }
        let error = await #expect(throws: StoreConnectionError.self) { try await Self.encrypted(plain + "?sslmode=require") }
        #expect(error?.reason.contains("does not offer TLS") == true, "\(error?.description ?? "")")
    }
}
