import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// The OGS register route is anonymous, so anyone can register a device for any
/// player's id. With `auth: {type: identity}` the caller's bearer token is shown to OGS's
/// `/api/v1/me` (here the OGS stand-in, a real HTTP server), and only that player's id may be
/// registered; an identity service that answers garbage or hangs gets a clear 502 or 503.
@Suite struct IdentityAuthTests {
    static func pipeline(ogs: OGSStandIn, broken: OGSStandIn) -> String {
        func route(_ path: String, _ standIn: OGSStandIn) -> String {
            """
              - action: register
                path: \(path)
                user_field: user_id
                user_format: digits
                token_field: device_token
                token_kind: device
                auth: {type: identity, url: "\(standIn.baseURL)/api/v1/me", timeout: 1s, cache: 60s}
            """
        }
        return """
            pipeline: owned
            routes:
            \(route("/register", ogs))
            \(route("/register-elsewhere", broken))
              - {action: users-by-token, path: /users-by-token/:device_token, token_kind: device}
            sources:
              - {type: http.event, path: /events, auth: {type: token, token: "identity-test-events-token"}}
            renderer: {type: json.template, token_kind: device, payload: {}}
            transport: {type: stdout}
            """
    }

    func withDaemon(_ body: @Sendable @escaping (HTTPTestClient, OGSStandIn, OGSStandIn) async throws -> Void) async throws {
        let directory = try TemporaryDirectory("identity")
        defer { directory.remove() }
        let ogs = try await OGSStandIn.start()
        let broken = try await OGSStandIn.start()
        try await withCleanup(
            {
                try directory.write("pipelines/owned.yaml", Self.pipeline(ogs: ogs, broken: broken))
                try await DaemonProcess.run(
                    arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"],
                    directory: directory.path
                ) { daemon in
                    let port = try await daemon.port()
                    // The listener comes up before the routes: a request before them gets 503 "starting".
                    try await eventually("the pipelines to be ready", timeout: .seconds(60)) {
                        try await HTTPTestClient(port: port).request("GET", "/readyz").status == 200
                    }
                    try await body(HTTPTestClient(port: port), ogs, broken)
                }
            },
            cleanup: {
                await ogs.stop()
                await broken.stop()
            }
        )
    }

    static let phone = String(repeating: "ab", count: 32)

    static func expectRefusal(_ response: HTTPTestClient.Response, _ status: Int, field: String, saying words: String) {
        #expect(response.status == status, "\(response.text)")
        #expect(response.body?["field"] == .string(field), "\(response.text)")
        #expect(response.body?["error"]?.stringValue?.contains(words) == true, "\(response.text)")
    }

    @Test func onlyThePlayerTheTokenBelongsToMayBeRegistered() async throws {
        try await withDaemon { client, ogs, _ in
            ogs.identify("alice-ogs-token", as: 1_783_478)
            let alice = ["authorization": "Bearer alice-ogs-token"]
            func register(_ user: JSON, _ token: String = Self.phone, headers: [String: String]) async throws -> HTTPTestClient.Response {
                try await client.request("POST", "/register", json: ["user_id": user, "device_token": .string(token)], headers: headers)
            }
            Self.expectRefusal(try await register("1783478", headers: [:]), 401, field: "authorization", saying: "credentials")
            Self.expectRefusal(
                try await register("1783478", headers: ["authorization": "Bearer made-up"]),
                401,
                field: "authorization",
                saying: "refused the credential"
            )
            let registered = try await register(1_783_478, headers: alice)
            #expect(registered.status == 200 && registered.body?["user_id"] == "1783478", "\(registered.text)")
            let asked = ogs.identityRequests
            Self.expectRefusal(
                try await register("123456", String(repeating: "cd", count: 32), headers: alice),
                403,
                field: "user_id",
                saying: "another user"
            )
            #expect(try await register("1783478", String(repeating: "ef", count: 32), headers: alice).status == 200)
            #expect(ogs.identityRequests == asked, "a positive answer is reused for the same token")
            let stored = try await client.request("GET", "/users-by-token/\(String(repeating: "cd", count: 32))")
            #expect(stored.body?["user_ids"] == [], "nothing is stored for a refused request: \(stored.text)")
        }
    }

    @Test func anIdentityServiceThatAnswersGarbageOrHangsIsToldAsSuch() async throws {
        try await withDaemon { client, _, broken in
            broken.identify("bob-ogs-token", as: 42)
            func register(_ token: String) async throws -> HTTPTestClient.Response {
                try await client.request(
                    "POST",
                    "/register-elsewhere",
                    json: ["user_id": "42", "device_token": .string(Self.phone)],
                    headers: ["authorization": "Bearer \(token)"],
                    timeout: 120
                )
            }
            broken.behaveForIdentity(.malformed)
            Self.expectRefusal(try await register("bob-ogs-token"), 502, field: "authorization", saying: "names no user")
            broken.behaveForIdentity(.status(500))
            Self.expectRefusal(try await register("bob-ogs-token"), 502, field: "authorization", saying: "HTTP 500")
            broken.behaveForIdentity(.throttled(retryAfter: "30"))
            Self.expectRefusal(try await register("bob-ogs-token"), 503, field: "authorization", saying: "throttled")
            // A service that never answers: the route's bound (1 s) answers 503 with Retry-After,
            // long before the client's own timeout.
            broken.behaveForIdentity(.delayed(.seconds(3600)))
            let started = ContinuousClock.now
            let hung = try await register("bob-ogs-token")
            Self.expectRefusal(hung, 503, field: "authorization", saying: "did not answer")
            #expect(hung.headers["retry-after"] != nil)
            #expect(ContinuousClock.now - started < .seconds(60), "bounded by the check's timeout, not the client's")
            broken.behaveForIdentity(.normal)
            #expect(try await register("bob-ogs-token").status == 200, "the service is back: the registration goes through")
            #expect(try await client.request("GET", "/users-by-token/\(Self.phone)").body?["user_ids"] == ["42"])
        }
    }
}
