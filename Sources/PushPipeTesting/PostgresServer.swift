import Foundation
import NIOCore
import NIOPosix
import Subprocess

#if canImport(System)
import System
#else
import SystemPackage
#endif

/// A PostgreSQL server of a test's own (Debian's `postgresql` package), for what the shared
/// test server must not change: TLS on with a certificate the test made, settings of its own.
/// On 127.0.0.1, trust authentication, stopped and removed by `stop`. Run as root (CI), it
/// runs as the `postgres` user, as PostgreSQL requires.
public struct PostgresServer: Sendable {
    public let port: Int
    public let directory: String

    /// The newest installed server's binaries, or nil when none is installed.
    public static var binaries: String? {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        guard let newest = versions.compactMap(Int.init).max() else { return nil }
        let binaries = "\(root)/\(newest)/bin"
        return FileManager.default.isExecutableFile(atPath: "\(binaries)/initdb") ? binaries : nil
    }

    /// What a test gives the server: its certificate and key (PEM), written where only the
    /// server's user can read the key.
    public struct TLSFiles: Sendable {
        public var certificatePEM: String
        public var keyPEM: String
        public init(certificatePEM: String, keyPEM: String) {
            self.certificatePEM = certificatePEM
            self.keyPEM = keyPEM
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Creates a cluster and starts it; `tls` turns `ssl` on with those files.
    public static func start(tls: TLSFiles? = nil) async throws -> PostgresServer {
        guard let binaries else { throw Failure(description: "no PostgreSQL server is installed (Debian's postgresql package)") }
        let directory = try TemporaryDirectory("postgres-server").path
        let owner = Self.serverUser()
        var settings = ["listen_addresses=127.0.0.1", "unix_socket_directories=\(directory)", "fsync=off"]
        if let tls {
            try tls.certificatePEM.write(toFile: "\(directory)/server.crt", atomically: true, encoding: .utf8)
            try tls.keyPEM.write(toFile: "\(directory)/server.key", atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: "\(directory)/server.key")
            settings += ["ssl=on", "ssl_cert_file=\(directory)/server.crt", "ssl_key_file=\(directory)/server.key"]
        }
        if let owner {
            for path in [directory, "\(directory)/server.crt", "\(directory)/server.key"] where FileManager.default.fileExists(atPath: path) {
                guard chown(path, owner.uid, owner.gid) == 0 else { throw Failure(description: "chown \(path) failed: errno \(errno)") }
            }
        }
        try await run("\(binaries)/initdb", ["-D", "\(directory)/data", "-A", "trust", "-U", "postgres", "--no-sync"], as: owner)
        // A free port may be taken by another process before the server binds it (tests start
        // servers side by side): then the start fails, and the next one tries another port.
        var attempt = 1
        while true {
            let port = try await Self.freePort()
            let options = (settings + ["port=\(port)"]).map { "-c \($0)" }.joined(separator: " ")
            do {
                try await run(
                    "\(binaries)/pg_ctl",
                    ["-D", "\(directory)/data", "-o", options, "-l", "\(directory)/server.log", "-w", "start"],
                    as: owner
                )
                return PostgresServer(port: port, directory: directory)
            } catch let failure as Failure {
                let log = (try? String(contentsOfFile: "\(directory)/server.log", encoding: .utf8)) ?? ""
                guard attempt < 3 else { throw Failure(description: failure.description + "\nserver.log:\n" + log.suffix(2000)) }
                attempt += 1
            }
        }
    }

    /// A `postgres://` URL of the server's `postgres` database with these query parameters.
    public func url(_ query: String) -> String {
        "postgres://postgres@127.0.0.1:\(port)/postgres?\(query)"
    }

    public func stop() async {
        guard let binaries = Self.binaries else { return }
        try? await Self.run("\(binaries)/pg_ctl", ["-D", "\(directory)/data", "-m", "immediate", "-w", "stop"], as: Self.serverUser())
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// PostgreSQL refuses to run as root: then it runs as `postgres`.
    private static func serverUser() -> (uid: uid_t, gid: gid_t)? {
        guard getuid() == 0, let entry = getpwnam("postgres") else { return nil }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }

    /// As root, through `su` (as `.ci/run` does): a child that changes its user before exec is
    /// forked from this multithreaded process, and such a child can deadlock before it execs.
    private static func run(_ executable: String, _ arguments: [String], as owner: (uid: uid_t, gid: gid_t)?) async throws {
        let (program, all) =
            owner == nil
            ? (executable, arguments)
            : ("/bin/su", ["postgres", "-s", "/bin/sh", "-c", ([executable] + arguments).map(Self.quoted).joined(separator: " ")])
        let result = try await Subprocess.run(
            .path(FilePath(program)),
            arguments: Arguments(all),
            workingDirectory: "/tmp",
            output: .string(limit: 1 << 16),
            error: .string(limit: 1 << 16)
        )
        guard case .exited(0) = result.terminationStatus else {
            throw Failure(description: "\(executable) \(arguments.first ?? "") failed (\(result.terminationStatus)): \(result.standardError)")
        }
    }

    private static func quoted(_ argument: String) -> String {
        "'" + argument.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// A port nothing listens on now (the kernel's choice; another process could take it
    /// before the server binds it, which fails the start rather than the test's meaning).
    private static func freePort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress?.port ?? 0
        try await channel.close()
        return port
    }
}
