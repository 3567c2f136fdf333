import Foundation
import PushPipeSQLite
import PushPipeTesting
import Subprocess
import Testing

#if canImport(System)
import System
#else
import SystemPackage
#endif

/// The commands of the docs, run as written, so that they keep working as documented (the
/// three daemons of `docs/scale-out.md` on one machine, each with its own admin port). Only
/// what no test machine has is changed: `db.internal` is reached through `hostaddr=127.0.0.1`
/// (its name still verified, against a certificate the test made), and the apps' `0.0.0.0` is
/// 127.0.0.1.
@Suite(.serialized) struct DocumentedCommandsTests {
    /// The lines of the document's `sh` blocks, continuation lines joined, comments and blank
    /// lines left out.
    static func shellLines(of document: String) throws -> [String] {
        let text = try String(contentsOf: Repository.root.appendingPathComponent(document), encoding: .utf8)
        var lines: [String] = []
        var inBlock = false
        var pending = ""
        for line in text.components(separatedBy: "\n") {
            if line.hasPrefix("```") {
                inBlock = line == "```sh"
                continue
            }
            guard inBlock else { continue }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasSuffix("\\") {
                pending += trimmed.dropLast() + " "
                continue
            }
            let whole = pending + trimmed
            pending = ""
            if !whole.isEmpty, !whole.hasPrefix("#") { lines.append(whole) }
        }
        return lines
    }

    /// A command line's words, as `sh` splits them: quotes kept together, `#` starts a comment.
    static func words(_ line: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quote: Character?
        var inWord = false
        for character in line {
            if let open = quote {
                if character == open { quote = nil } else { current.append(character) }
            } else if character == "'" || character == "\"" {
                quote = character
                inWord = true
            } else if character == "#" && !inWord {
                break
            } else if character == " " {
                if inWord { words.append(current) }
                current = ""
                inWord = false
            } else {
                current.append(character)
                inWord = true
            }
        }
        if inWord { words.append(current) }
        return words
    }

    @Test(.enabled(if: PostgresServer.binaries != nil, "no PostgreSQL server installed (Debian's postgresql)"))
    func scaleOutCommandsWorkAsWritten() async throws {
        let lines = try Self.shellLines(of: "docs/scale-out.md")
        let setup = lines.filter { $0.hasPrefix("psql ") || $0.hasPrefix("createdb ") }
        let onOneMachine = lines.filter { $0.hasPrefix("pushpipe run ") && $0.contains("--admin-listen") }
        #expect(setup.count == 2 && onOneMachine.count == 3, "the document's commands changed: \(lines)")
        let directory = try TemporaryDirectory("documented")
        defer { directory.remove() }
        try directory.write("pipelines/doc.yaml", SamplePipeline.http("doc"))
        let authority = try TestCertificateAuthority(serverNames: ["db.internal"])
        let ca = directory.file("ca.pem")
        try authority.writeCACertificate(to: ca)
        let server = try await PostgresServer.start(tls: .init(certificatePEM: authority.serverCertificatePEM, keyPEM: authority.serverKeyPEM))
        try await withCleanup(
            {
                // "As PostgreSQL's superuser": libpq's environment says which server that is.
                let superuser: [Environment.Key: String?] = ["PGHOST": "127.0.0.1", "PGPORT": String(server.port), "PGUSER": "postgres"]
                for line in setup {
                    var words = Self.words(line)
                    words[0] = "\(PostgresServer.binaries!)/\(words[0])"
                    let result = try await Subprocess.run(
                        .path(FilePath(words[0])),
                        arguments: Arguments(Array(words.dropFirst())),
                        environment: .inherit.updating(superuser),
                        output: .string(limit: 4096),
                        error: .string(limit: 4096)
                    )
                    let succeeded = if case .exited(0) = result.terminationStatus { true } else { false }
                    #expect(succeeded, "\(line): \(result.standardError)")
                }
                let arguments = onOneMachine.map { line in
                    Self.words(line).dropFirst().map { word in
                        word.replacingOccurrences(of: "0.0.0.0:", with: "127.0.0.1:")
                            .replacingOccurrences(of: "@db.internal:5432/", with: "@db.internal:\(server.port)/")
                            .replacingOccurrences(of: "?sslmode=verify-full", with: "?sslmode=verify-full&hostaddr=127.0.0.1&sslrootcert=\(ca)")
                    } + ["--plugins", "none"]
                }
                // The three at once, on one machine: each starts, serves and answers on its admin port.
                try await DaemonProcess.run(arguments: arguments[0], directory: directory.path) { first in
                    try await DaemonProcess.run(arguments: arguments[1], directory: directory.path) { second in
                        try await DaemonProcess.run(arguments: arguments[2], directory: directory.path) { third in
                            for (daemon, adminPort) in [(first, 9091), (second, 9092), (third, 9093)] {
                                let client = HTTPTestClient(port: try await daemon.port())
                                #expect(
                                    try await client.request(
                                        "POST",
                                        "/register",
                                        json: ["user_id": "alice", "device_token": .string(String(repeating: "ab", count: 32))]
                                    ).status == 200
                                )
                                #expect(try await daemon.adminPort() == adminPort)
                                #expect(
                                    try await HTTPTestClient(port: adminPort).request("GET", "/readyz").status == 200,
                                    "\(daemon.standardError.suffix(5))"
                                )
                            }
                        }
                    }
                }
            },
            cleanup: server.stop
        )
    }

    /// docs/deploy.md's online backups of the SQLite state, taken while a daemon writes to it;
    /// a daemon started on each copy serves the registrations made before it.
    @Test func sqliteBackupsOfARunningDaemonsStateWorkAsWritten() async throws {
        let lines = try Self.shellLines(of: "docs/deploy.md").filter { $0.hasPrefix("sqlite3 ") }
        #expect(lines.count == 2, "the document's backup commands changed: \(lines)")
        let directory = try TemporaryDirectory("backup")
        defer { directory.remove() }
        try FileManager.default.createDirectory(atPath: directory.file("backups"), withIntermediateDirectories: true)
        try directory.write(
            "pipelines/kept.yaml",
            """
            pipeline: kept
            routes:
              - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: device_token}
              - {action: users-by-token, path: /users/:device_token}
            sources: [{type: http.event, path: /events}]
            renderer: {type: json.template, payload: {}}
            transport: {type: stdout}
            """
        )
        let token = String(repeating: "ab", count: 32)
        let copies = try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--store", "sqlite:\(directory.file("state/pushpipe.sqlite"))", "--plugins", "none"],
            directory: directory.path
        ) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            #expect(try await client.request("POST", "/register", json: ["user_id": "alice", "device_token": .string(token)]).status == 200)
            var copies: [String] = []
            for line in lines {
                let words = Self.words(line).map {
                    $0.replacingOccurrences(of: "/var/lib/pushpipe/", with: directory.file("state/"))
                        .replacingOccurrences(of: "/var/backups/", with: directory.file("backups/"))
                }
                let result = try await Subprocess.run(
                    .name("sqlite3"),
                    arguments: Arguments(Array(words.dropFirst())),
                    output: .string(limit: 4096),
                    error: .string(limit: 4096)
                )
                let succeeded = if case .exited(0) = result.terminationStatus { true } else { false }
                #expect(succeeded, "\(line): \(result.standardError ?? "")")
                copies += words.compactMap { word in word.split(separator: " ").map(String.init).first { $0.contains("/backups/") } }
                    .map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "'")) }
                // The daemon goes on writing between the copies.
                #expect(try await client.request("POST", "/register", json: ["user_id": "bob", "device_token": .string(token)]).status == 200)
            }
            return copies
        }
        #expect(copies.count == 2, "\(copies)")
        for copy in copies {
            try await DaemonProcess.run(
                arguments: ["run", "--listen", "127.0.0.1:0", "--store", "sqlite:\(copy)", "--plugins", "none"],
                directory: directory.path
            ) { daemon in
                let users = try await HTTPTestClient(port: try await daemon.port()).request("GET", "/users/\(token)")
                #expect(users.body?["user_ids"]?.arrayValue?.contains("alice") == true, "\(copy): \(users.text)")
            }
        }
    }
}
