import Foundation
import GRDB
import PushPipeCore
import PushPipeTesting
import Testing

/// A route's `limits:` on a real daemon: token buckets per client address and per
/// caller (429 with `Retry-After`), `X-Forwarded-For` only from trusted proxies, a body size
/// limit (413), and a connection that does not send its request in time is closed.
@Suite struct RouteLimitsTests {
    static let pipeline = """
        pipeline: limited
        routes:
          - action: register
            path: /register
            user_field: user_id
            token_kind: device
            token_field: token
            limits: {per_client: 2/min, burst: 2, max_body: 200}
          - {action: register, path: /register-many, user_field: user_id, token_kind: device, token_field: token, max_tokens_per_user: 2}
        sources:
          - type: http.event
            path: /events
            auth: {type: token, token: backend-secret}
            user_field: user
            limits: {per_principal: 1/h, burst: 1}
        renderer: {type: json.template, payload: {text: "{{text}}"}}
        transport: {type: stdout}
        """

    static func run(_ extra: [String], _ body: @escaping @Sendable (DaemonProcess, TemporaryDirectory) async throws -> Void) async throws {
        let directory = try TemporaryDirectory("limits")
        defer { directory.remove() }
        try directory.write("pipelines/limited.yaml", Self.pipeline)
        let arguments = ["run", "--listen", "127.0.0.1:0", "--admin-listen", "off", "--store", "sqlite:state.sqlite", "--plugins", "none"]
        try await DaemonProcess.run(arguments: arguments + extra, directory: directory.path) { daemon in
            try await body(daemon, directory)
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
        }
    }

    static func register(_ client: HTTPTestClient, _ number: Int, headers: [String: String] = [:]) async throws -> HTTPTestClient.Response {
        try await client.request(
            "POST",
            "/register",
            json: ["user_id": .string("u\(number)"), "token": .string(String(format: "%064x", number))],
            headers: headers
        )
    }

    @Test func aClientPastItsBucketGets429AndForwardedForCountsOnlyFromATrustedProxy() async throws {
        try await Self.run([]) { daemon, _ in
            let client = HTTPTestClient(port: try await daemon.port())
            #expect(try await Self.register(client, 1).status == 200)
            #expect(try await Self.register(client, 2).status == 200)
            let refused = try await Self.register(client, 3)
            #expect(refused.status == 429 && refused.body?["error"]?.stringValue?.contains("too many") == true, "\(refused.text)")
            let retryAfter = try #require(refused.headers["retry-after"].flatMap(Int.init))
            #expect((1...30).contains(retryAfter), "2/min: a token every 30 s")
            let spoofed = try await Self.register(client, 4, headers: ["x-forwarded-for": "203.0.113.9"])
            #expect(spoofed.status == 429, "an untrusted peer cannot name another address")
        }
        try await Self.run(["--trusted-proxy", "127.0.0.1"]) { daemon, _ in
            let client = HTTPTestClient(port: try await daemon.port())
            for number in 1...2 { #expect(try await Self.register(client, number, headers: ["x-forwarded-for": "203.0.113.9"]).status == 200) }
            #expect(try await Self.register(client, 3, headers: ["x-forwarded-for": "203.0.113.9"]).status == 429)
            let other = try await Self.register(client, 4, headers: ["x-forwarded-for": "198.51.100.7, 127.0.0.1"])
            #expect(other.status == 200, "another client behind the proxy has its own bucket")
        }
    }

    @Test func aCallerPastItsBucketGets429AndALargeBody413() async throws {
        try await Self.run([]) { daemon, _ in
            let client = HTTPTestClient(port: try await daemon.port())
            let backend = ["authorization": "Bearer backend-secret"]
            #expect(try await client.request("POST", "/events", json: ["user": "u", "text": "one"], headers: backend).status == 202)
            let second = try await client.request("POST", "/events", json: ["user": "u", "text": "two"], headers: backend)
            #expect(second.status == 429 && second.headers["retry-after"] != nil)
            let unauthenticated = try await client.request("POST", "/events", json: ["user": "u", "text": "three"])
            #expect(unauthenticated.status == 401, "no caller, no bucket of theirs: the credentials are checked")

            let large = try await client.request(
                "POST",
                "/register",
                rawBody: "{\"user_id\": \"big\", \"token\": \"" + String(repeating: "a", count: 300) + "\"}",
                headers: ["content-type": "application/json"]
            )
            #expect(large.status == 413 && large.body?["field"] == "body", "\(large.text)")
        }
    }

    /// A user keeps `max_tokens_per_user` tokens: registering another removes the oldest.
    @Test func aUserKeepsItsNewestTokensUpToTheBound() async throws {
        try await Self.run([]) { daemon, directory in
            let client = HTTPTestClient(port: try await daemon.port())
            for number in 1...3 {
                let answer = try await client.request(
                    "POST",
                    "/register-many",
                    json: ["user_id": "keeper", "token": .string(String(format: "%064x", number))]
                )
                #expect(answer.status == 200)
            }
            let tokens = try await DatabaseQueue(path: directory.file("state.sqlite")).read { db in
                try String.fetchAll(db, sql: "SELECT token FROM registrations WHERE user_id = 'keeper' ORDER BY token")
            }
            #expect(tokens == [String(format: "%064x", 2), String(format: "%064x", 3)])
        }
    }

    /// A client that never finishes its request head is disconnected at the request timeout.
    @Test func aConnectionThatTricklesItsRequestIsClosed() async throws {
        try await Self.run(["--request-timeout", "1"]) { daemon, directory in
            let port = try await daemon.port()
            try directory.write(
                "slow.py",
                """
                import socket, sys, time
                s = socket.create_connection(("127.0.0.1", \(port)))
                s.sendall(b"POST /register HTTP/1.1\\r\\nHost: localhost\\r\\n")
                started = time.monotonic()
                s.settimeout(20)
                print("closed %s after %.1f s" % ("by the server" if s.recv(1) == b"" else "with data", time.monotonic() - started), flush=True)
                """
            )
            try await DaemonProcess.run(arguments: [], directory: directory.path, launcher: ["/usr/bin/env", "python3", "slow.py"]) { slow in
                Self.expectClosedAtTheTimeout(try await slow.waitForLine(containing: "closed", timeout: 25))
            }
            // The daemon still serves others.
            #expect(try await Self.register(HTTPTestClient(port: port), 1).status == 200)
        }
    }

    /// A request answered before its body came (a 404 needs no body), then the body, then
    /// nothing: the connection is closed at the request timeout all the same.
    @Test func aConnectionAnsweredBeforeItsBodyIsStillTimed() async throws {
        try await Self.run(["--request-timeout", "1"]) { daemon, directory in
            let port = try await daemon.port()
            try directory.write(
                "early.py",
                """
                import socket, sys, time
                s = socket.create_connection(("127.0.0.1", \(port)))
                s.sendall(b"POST /nowhere HTTP/1.1\\r\\nHost: localhost\\r\\nContent-Type: application/json\\r\\nContent-Length: 2\\r\\n\\r\\n")
                s.settimeout(20)
                answer = s.recv(4096)
                print("answered " + answer.split(b"\\r\\n")[0].decode(), flush=True)
                s.sendall(b"{}")
                started = time.monotonic()
                try:
                    rest = s.recv(4096)
                    print("closed %s after %.1f s" % ("by the server" if rest == b"" else "with data", time.monotonic() - started), flush=True)
                except socket.timeout:
                    print("closed never after 20 s", flush=True)
                """
            )
            try await DaemonProcess.run(arguments: [], directory: directory.path, launcher: ["/usr/bin/env", "python3", "early.py"]) { early in
                let answered = try await early.waitForLine(containing: "answered", timeout: 25)
                #expect(answered.contains("404"), "\(answered)")
                Self.expectClosedAtTheTimeout(try await early.waitForLine(containing: "closed", timeout: 25))
            }
        }
    }

    /// A client script's "closed by the server after N s": closed by the daemon, at its 1 s
    /// request timeout, well before the script's own 20 s.
    static func expectClosedAtTheTimeout(_ line: String) {
        #expect(line.contains("by the server"), "\(line)")
        let seconds = Double(line.split(separator: " ").dropLast().last ?? "") ?? 99
        #expect(seconds < 10, "closed at the 1 s request timeout, not by the 20 s client timeout: \(line)")
    }
}
