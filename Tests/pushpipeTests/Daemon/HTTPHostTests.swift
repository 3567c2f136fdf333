import Foundation
import JWTKit
import PushPipeCore
import PushPipeTesting
import Testing

/// Every error status the HTTP host answers, against the real daemon on a real socket.
@Suite(.serialized) struct HTTPHostTests {
    static let pipeline = """
        pipeline: http
        routes:
          - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: device_token}
          - action: register
            path: /me/fcm-token
            auth: {type: jwt, secret: "${HTTP_TEST_JWT_SECRET}"}
            token_kind: fcm
            token_format: opaque
            token_field: fcm_token
          - {action: settings, path: /me/settings, method: PATCH, auth: {type: jwt, secret: "${HTTP_TEST_JWT_SECRET}"}, keys: {enabled: boolean}}
          - {action: history, path: /me/history, auth: {type: jwt, secret: "${HTTP_TEST_JWT_SECRET}"}}
          - {action: diagnostics, path: /diagnostics/:user_id, user_param: user_id}
        sources:
          - {type: http.event, path: /events, wait: true, auth: {type: token, token: "${HTTP_TEST_EVENTS_TOKEN}"}}
        renderer: {type: json.template, token_kind: fcm, payload: {title: "{{title}}"}}
        transport: {type: stdout}
        """

    static let secret = "a-test-secret-made-for-this-run-\(UUID().uuidString)"

    func withDaemon(_ body: @Sendable @escaping (HTTPTestClient, DaemonProcess) async throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("pipelines/http.yaml", Self.pipeline)
        try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"],
            directory: directory.path,
            environment: ["HTTP_TEST_JWT_SECRET": Self.secret, "HTTP_TEST_EVENTS_TOKEN": "events-\(Self.secret)"]
        ) { daemon in
            try await body(HTTPTestClient(port: try await daemon.port()), daemon)
        }
    }

    struct Claims: JWTPayload {
        var sub: SubjectClaim
        var exp: ExpirationClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func bearer(_ user: String, secret: String = secret, expires: Date = Date().addingTimeInterval(600)) async throws -> [String: String] {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        let token = try await keys.sign(Claims(sub: .init(value: user), exp: .init(value: expires)))
        return ["authorization": "Bearer \(token)"]
    }

    @Test func statusesAndErrorBodies() async throws {
        try await withDaemon { client, _ in
            func expectError(_ response: HTTPTestClient.Response, _ status: Int, field: String?) {
                #expect(response.status == status, "\(response.text)")
                #expect(response.body?["error"]?.stringValue?.isEmpty == false, "\(response.text)")
                #expect(response.body?["field"] == (field.map(JSON.string) ?? .null), "\(response.text)")
            }
            let token = String(repeating: "ab", count: 80)
            #expect(
                try await client.request("POST", "/register", json: ["user_id": "1783478", "device_token": .string(token.uppercased())]).status == 200
            )
            expectError(
                try await client.request("POST", "/register", rawBody: "{not json", headers: ["content-type": "application/json"]),
                400,
                field: "body"
            )
            expectError(try await client.request("POST", "/register", json: ["user_id": "u"]), 400, field: "device_token")
            expectError(try await client.request("POST", "/register", json: ["user_id": "u", "device_token": "abc"]), 400, field: "device_token")
            expectError(
                try await client.request("POST", "/register", json: ["user_id": "u", "device_token": .string(String(repeating: "a", count: 31))]),
                400,
                field: "device_token"
            )
            expectError(try await client.request("POST", "/me/fcm-token", json: ["fcm_token": "x"]), 401, field: "authorization")
            expectError(
                try await client.request(
                    "POST",
                    "/me/fcm-token",
                    json: ["fcm_token": "x"],
                    headers: try await Self.bearer("u", secret: "a-different-secret-of-enough-length-0123456789")
                ),
                401,
                field: "authorization"
            )
            expectError(
                try await client.request(
                    "POST",
                    "/me/fcm-token",
                    json: ["fcm_token": "x"],
                    headers: try await Self.bearer("u", expires: Date().addingTimeInterval(-60))
                ),
                401,
                field: "authorization"
            )
            expectError(
                try await client.request("POST", "/events", json: ["user": "u"], headers: ["authorization": "Bearer nope"]),
                401,
                field: "authorization"
            )
            expectError(try await client.request("GET", "/nowhere"), 404, field: "path")
            expectError(try await client.request("GET", "/diagnostics/nobody"), 404, field: "user_id")
            expectError(try await client.request("DELETE", "/register"), 405, field: "method")
            expectError(
                try await client.request(
                    "POST",
                    "/register",
                    rawBody: String(repeating: "x", count: 70_000),
                    headers: ["content-type": "application/json"]
                ),
                413,
                field: "body"
            )
            expectError(
                try await client.request("POST", "/register", rawBody: "user_id=u", headers: ["content-type": "application/x-www-form-urlencoded"]),
                415,
                field: "content-type"
            )
            expectError(try await client.request("POST", "/register", json: [1, 2]), 422, field: "body")
            expectError(
                try await client.request("POST", "/register", json: ["user_id": ["nested": true], "device_token": .string(token)]),
                422,
                field: "user_id"
            )
            expectError(
                try await client.request("PATCH", "/me/settings", json: ["enabled": "no"], headers: try await Self.bearer("u")),
                422,
                field: "enabled"
            )
            expectError(
                try await client.request("PATCH", "/me/settings", json: ["volume": 3], headers: try await Self.bearer("u")),
                400,
                field: "volume"
            )
            expectError(try await client.request("GET", "/me/history?limit=0", headers: try await Self.bearer("u")), 400, field: "limit")
            #expect(try await client.request("GET", "/healthz").status == 200)
        }
    }

    @Test func rejectedRequestsStoreNothing() async throws {
        try await withDaemon { client, _ in
            _ = try await client.request("POST", "/register", json: ["user_id": "ghost", "device_token": "zz"])
            _ = try await client.request(
                "POST",
                "/register",
                json: ["user_id": "ghost", "device_token": .string(String(repeating: "ab", count: 16)), "x": [1]],
                headers: ["content-type": "text/plain"]
            )
            #expect(try await client.request("GET", "/diagnostics/ghost").status == 404)
        }
    }

    @Test func jwtUserRegistersChangesSettingsAndReadsHistory() async throws {
        try await withDaemon { client, _ in
            let alice = try await Self.bearer("alice")
            let registered = try await client.request(
                "POST",
                "/me/fcm-token",
                json: ["fcm_token": "SSLCOPWPPPei40330dndlspfjiwofjio"],
                headers: alice
            )
            #expect(registered.status == 200)
            #expect(registered.body?["user_id"] == "alice")
            #expect(registered.text.contains("SSLCOPWPPPei40330dndlspfjiwofjio") == false, "tokens are masked in responses")
            let settings = try await client.request("PATCH", "/me/settings", json: ["enabled": false], headers: alice)
            #expect(settings.body?["settings"] == ["enabled": false])
            let history = try await client.request("GET", "/me/history", headers: alice)
            #expect(history.body == ["history": [], "next_before": nil])
            let diagnostics = try await client.request("GET", "/diagnostics/alice")
            #expect(diagnostics.body?["settings"] == ["enabled": false])
        }
    }

    @Test func eventsAreAcceptedDeliveredAndRecordedInHistory() async throws {
        try await withDaemon { client, daemon in
            let bob = try await Self.bearer("bob")
            _ = try await client.request("POST", "/me/fcm-token", json: ["fcm_token": "bob-token-1"], headers: bob)
            // `wait: true`: the answer comes once the event was delivered and recorded.
            let report = try await client.request(
                "POST",
                "/events",
                json: ["user": "bob", "title": "Hello"],
                headers: ["authorization": "Bearer events-\(Self.secret)"]
            )
            #expect(report.status == 200)
            #expect(report.body?["status"] == "delivered")
            #expect(report.body?["deliveries"]?[0]?["token"] == "bob-toke…")
            try await daemon.waitForLine(containing: "\"title\": \"Hello\"")
            let history = try await client.request("GET", "/me/history", headers: bob)
            #expect(history.body?["history"] == [["title": "Hello"]])
        }
    }
}
