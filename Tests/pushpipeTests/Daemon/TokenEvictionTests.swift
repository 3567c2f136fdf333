import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// On an anonymous register route, made-up tokens for a real player's id must not push out the
/// player's phone (`max_tokens_per_user`). Through the daemon's own routes: a phone that
/// has received a notification stays, whatever is registered for its user after it.
@Suite struct TokenEvictionTests {
    static let pipeline = """
        pipeline: evict
        routes:
          - {action: register, path: /register, user_field: user_id, user_format: digits, token_field: device_token, token_kind: device,
             max_tokens_per_user: 3}
          - {action: users-by-token, path: /users-by-token/:device_token, token_kind: device}
        sources:
          - {type: http.event, path: /events, wait: true, auth: {type: token, token: "eviction-test-events-token"}}
        renderer: {type: json.template, token_kind: device, payload: {title: "{{title}}"}}
        transport: {type: stdout}
        """

    @Test func registrationsForAKnownUserNeverEvictTheDeviceThatReceivedNotifications() async throws {
        let directory = try TemporaryDirectory("eviction")
        defer { directory.remove() }
        try directory.write("pipelines/evict.yaml", Self.pipeline)
        try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"],
            directory: directory.path
        ) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            // The listener comes up before the routes: a request before them gets 503 "starting".
            try await eventually("the pipelines to be ready", timeout: .seconds(60)) { try await client.request("GET", "/readyz").status == 200 }
            func register(_ token: String) async throws {
                let answer = try await client.request("POST", "/register", json: ["user_id": 1_783_478, "device_token": .string(token)])
                #expect(answer.status == 200, "\(answer.text)")
            }
            func users(of token: String) async throws -> JSON? {
                try await client.request("GET", "/users-by-token/\(token)").body?["user_ids"]
            }
            let phone = String(repeating: "ab", count: 32)
            try await register(phone)
            let sent = try await client.request(
                "POST",
                "/events",
                json: ["user": "1783478", "title": "Your turn"],
                headers: ["authorization": "Bearer eviction-test-events-token"]
            )
            #expect(sent.status == 200 && sent.text.contains("delivered"), "\(sent.text)")
            let fakes = (0..<10).map { String(format: "%064x", 0xf00d + $0) }
            for fake in fakes { try await register(fake) }
            #expect(try await users(of: phone) == ["1783478"], "the phone that received a notification stays")
            #expect(try await users(of: fakes[0]) == [], "the fakes push out each other")
            #expect(try await users(of: fakes[9]) == ["1783478"], "the newest registration is kept")
        }
    }
}
