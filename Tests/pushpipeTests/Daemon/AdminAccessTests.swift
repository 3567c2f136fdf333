import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// The admin listener streams event bodies (`/tap`): with a token it asks for it,
/// beyond loopback it refuses to run without one, on loopback it answers only requests for this
/// machine (DNS rebinding), and its taps are bounded.
@Suite struct AdminAccessTests {
    static let pipeline = """
        pipeline: guarded
        sources:
          - {type: http.event, path: /events, user_field: user}
        renderer: {type: json.template, payload: {text: "{{text}}"}}
        transport: {type: stdout}
        """

    static func run(
        _ extra: [String],
        environment: [String: String] = [:],
        _ body: @escaping @Sendable (DaemonProcess, TemporaryDirectory) async throws -> Void
    ) async throws {
        let directory = try TemporaryDirectory("admin-access")
        defer { directory.remove() }
        try directory.write("pipelines/guarded.yaml", Self.pipeline)
        let arguments = ["run", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store", "sqlite:state.sqlite", "--plugins", "none"]
        try await DaemonProcess.run(arguments: arguments + extra, directory: directory.path, environment: environment) { daemon in
            try await body(daemon, directory)
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
        }
    }

    @Test func withATokenTheTapTheStatusPageAndMetricsAskForIt() async throws {
        let token = "adm-" + UUID().uuidString
        try await Self.run([], environment: ["PUSHPIPE_ADMIN_TOKEN": token]) { daemon, _ in
            let admin = HTTPTestClient(port: try await daemon.adminPort())
            let bearer = ["authorization": "Bearer \(token)"]
            for path in ["/metrics", "/", "/status", "/tap"] {
                let refused = try await admin.request("GET", path, headers: ["authorization": "Bearer wrong"])
                #expect(refused.status == 401 && refused.body?["field"] == "authorization", "\(path): \(refused.status)")
                #expect(try await admin.request("GET", path).status == 401, "\(path) without a token")
            }
            #expect(try await admin.request("GET", "/metrics", headers: bearer).status == 200)
            #expect(try await admin.request("GET", "/", headers: bearer).text.contains("guarded"))
            #expect(try await admin.request("GET", "/healthz").status == 200, "health stays open")
            #expect(try await admin.request("GET", "/readyz").body == ["status": "ready"], "readiness stays open")
        }
    }

    @Test func metricsCanStayOpenForAScraper() async throws {
        try await Self.run(["--admin-token", "scrape-me-not", "--admin-metrics-public"]) { daemon, _ in
            let admin = HTTPTestClient(port: try await daemon.adminPort())
            #expect(try await admin.request("GET", "/metrics").status == 200)
            #expect(try await admin.request("GET", "/").status == 401)
        }
    }

    @Test func onLoopbackOnlyRequestsForThisMachineAreAnswered() async throws {
        try await Self.run([]) { daemon, _ in
            let admin = HTTPTestClient(port: try await daemon.adminPort())
            let rebound = try await admin.request("GET", "/metrics", headers: ["host": "attacker.example:9090"])
            #expect(rebound.status == 403 && rebound.body?["field"] == "host", "\(rebound.status) \(rebound.text)")
            // Names that only start like a loopback address are somebody's domain.
            for host in [
                "127.0.0.1.attacker.example", "127.0.0.1.attacker.example:9090", "127.evil.example:9090", "[::1].attacker.example",
                "[::1]x:9090", "127.0.0.256:9090", "127.0.0.1:90ab", "localhost.attacker.example",
            ] {
                let refused = try await admin.request("GET", "/metrics", headers: ["host": host])
                #expect(refused.status == 403, "Host \(host): \(refused.status)")
            }
            for host in ["127.0.0.1:9090", "127.1.2.3", "[::1]:9090", "[::1]", "LOCALHOST"] {
                #expect(try await admin.request("GET", "/metrics", headers: ["host": host]).status == 200, "Host \(host)")
            }
            #expect(try await admin.request("GET", "/metrics", headers: ["host": "localhost:9090"]).status == 200)
            #expect(try await admin.request("GET", "/metrics").status == 200, "no token on loopback: open, as before")
        }
    }

    /// `[::1]:PORT` is loopback as written in a URL, not a host name to resolve.
    @Test func theAdminListenerTakesABracketedIPv6Loopback() async throws {
        let directory = try TemporaryDirectory("admin-ipv6")
        defer { directory.remove() }
        try directory.write("pipelines/guarded.yaml", Self.pipeline)
        let arguments = ["run", "--listen", "127.0.0.1:0", "--admin-listen", "[::1]:0", "--store", "sqlite:state.sqlite", "--plugins", "none"]
        try await DaemonProcess.run(arguments: arguments, directory: directory.path) { daemon in
            let line = try await daemon.waitForLine(containing: "admin on http://")
            #expect(line.contains("http://[::1]:"), "\(line)")
            _ = try await daemon.adminPort()
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0, "\(daemon.standardError.joined(separator: "\n"))")
        }
    }

    @Test func beyondLoopbackWithoutATokenTheDaemonDoesNotStart() async throws {
        let directory = try TemporaryDirectory("admin-exposed")
        defer { directory.remove() }
        try directory.write("pipelines/guarded.yaml", Self.pipeline)
        // Refused before anything listens: no socket is opened on 0.0.0.0.
        let arguments = ["run", "--listen", "127.0.0.1:0", "--admin-listen", "0.0.0.0:0", "--store", "sqlite:state.sqlite", "--plugins", "none"]
        try await DaemonProcess.run(arguments: arguments, directory: directory.path) { daemon in
            let status = try await daemon.waitForExit()
            #expect(status == 1)
            let said = daemon.standardError.joined(separator: "\n")
            #expect(said.contains("not starting") && said.contains("--admin-token"), "\(said)")
            #expect(!said.contains("listening on"))
        }
    }

    /// `pushpipe tap` takes the token from the environment; past the bound, a tap gets 429.
    @Test func tapsAreBoundedAndTheCommandPresentsTheToken() async throws {
        let token = "tap-" + UUID().uuidString
        try await Self.run(["--admin-max-taps", "1"], environment: ["PUSHPIPE_ADMIN_TOKEN": token]) { daemon, directory in
            let adminPort = try await daemon.adminPort()
            try await DaemonProcess.run(
                arguments: ["tap", "--admin", "http://127.0.0.1:\(adminPort)", "--json", "--limit", "1"],
                directory: directory.path,
                environment: ["PUSHPIPE_ADMIN_TOKEN": token]
            ) { tap in
                try await tap.waitForLine(containing: "connected to")
                let admin = HTTPTestClient(port: adminPort)
                let second = try await admin.request("GET", "/tap", headers: ["authorization": "Bearer \(token)"])
                #expect(second.status == 429 && second.headers["retry-after"] != nil, "\(second.status)")
                let api = HTTPTestClient(port: try await daemon.port())
                #expect(try await api.request("POST", "/events", json: ["user": "u", "text": "seen"]).status == 202)
                #expect(try await tap.waitForExit() == 0)
                #expect(tap.standardOutput.first?.contains("seen") == true, "\(tap.standardOutput)")
            }
            // Its tap ended: the next one is admitted.
            try await DaemonProcess.run(
                arguments: ["tap", "--admin", "http://127.0.0.1:\(adminPort)", "--limit", "1"],
                directory: directory.path
            ) { unauthorized in
                let status = try await unauthorized.waitForExit()
                #expect(status != 0)
                #expect(unauthorized.standardError.joined().contains("PUSHPIPE_ADMIN_TOKEN"))
            }
        }
    }
}
