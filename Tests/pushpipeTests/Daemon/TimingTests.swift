import Foundation
import PushPipeCore
import PushPipePostgresTesting
import PushPipeTesting
import Testing

/// Timing on real daemons and both stores: a scheduled event survives SIGKILL and is sent by the
/// next daemon once due (not before, and once); a time zone that is not one changes nothing.
@Suite(.serialized) struct TimingTests {
    static let pipeline = """
        pipeline: timed
        routes:
          - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: device_token, time_zone_field: time_zone}
          - {action: diagnostics, path: /diagnostics/:user_id, user_param: user_id}
          - {action: cancel, path: /events/scheduled/:key, auth: {type: token, token: backend-secret}}
          - {action: settings, path: /settings/:user_id, user_param: user_id, keys: {enabled: boolean, time_zone: time_zone, quiet_hours: quiet_hours}}
        sources:
          - {type: http.event, path: /events, user_field: user, auth: {type: token, token: backend-secret}}
        filters:
          - {type: settings.enabled}
          - {type: timing.schedule, at_field: send_at, replace_key_field: reminder_id}
        renderer: {type: json.template, token_kind: device, payload: {text: "{{text}}"}}
        transport: {type: stdout}
        """

    static let backend = ["authorization": "Bearer backend-secret"]
    static let token = String(repeating: "7e", count: 32)

    /// The event's status once its state is `state` (nil before: JSON's own nil would be a value).
    static func status(_ client: HTTPTestClient, _ location: String, when state: String, headers: [String: String] = backend) async throws -> JSON? {
        let body = try await client.request("GET", location, headers: headers).body
        return body?["state"]?.stringValue == state ? body : JSON?.none
    }

    @Test(arguments: IdempotentAcceptTests.StoreKind.allCases)
    func aScheduledEventOutlivesSIGKILLAndIsSentOnceDue(_ kind: IdempotentAcceptTests.StoreKind) async throws {
        guard let store = try await EventStatusTests.store(kind) else { return }
        let directory = try TemporaryDirectory("timing-\(kind)")
        defer { directory.remove() }
        try directory.write("pipelines/timed.yaml", Self.pipeline)
        let arguments = ["run", "--listen", "127.0.0.1:0", "--admin-listen", "off", "--store", store, "--plugins", "none"]
        // The first daemon with its admin listener: the held gauge is read from the store.
        let first = arguments.filter { $0 != "--admin-listen" && $0 != "off" }
        let (location, sendAt) = try await DaemonProcess.run(arguments: first, directory: directory.path) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            #expect(try await client.request("POST", "/register", json: ["user_id": "ana", "device_token": .string(Self.token)]).status == 200)
            // Far enough ahead for a busy machine to store it before it is due.
            let sendAt = (Date().timeIntervalSince1970 + 8).rounded(.up)
            let accepted = try await client.request(
                "POST",
                "/events",
                json: ["user": "ana", "text": "see you tomorrow", "send_at": .string(EventRecord.timestamp(sendAt))],
                headers: Self.backend
            )
            #expect(accepted.status == 202)
            let location = try #require(accepted.headers["location"])
            // Its record (with the filter's code) is written just after the hold is stored.
            let status = try await eventually("the event is scheduled") {
                try await Self.status(client, location, when: "scheduled").flatMap { $0["code"] == nil ? JSON?.none : $0 }
            }
            #expect(status["held_until"]?.stringValue == EventRecord.timestamp(sendAt))
            #expect(status["code"] == "send_at")
            #expect(daemon.standardOutput.allSatisfy { !$0.contains("see you tomorrow") }, "nothing sent yet")
            let admin = HTTPTestClient(port: try await daemon.adminPort())
            let samples = prometheusSamples(try await admin.request("GET", "/metrics").text)
            #expect(samples["pushpipe_events_held{pipeline=\"timed\"}"] == 1, "\(samples.filter { $0.key.contains("held") })")
            #expect(samples.contains { $0.key.hasPrefix("pushpipe_events_held_total{") && $0.key.contains("reason=\"send_at\"") && $0.value == 1 })
            daemon.signal(SIGKILL)
            #expect(try await daemon.waitForExit() == 128 + SIGKILL)
            return (location, sendAt)
        }
        try await DaemonProcess.run(arguments: arguments, directory: directory.path) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            let status = try await eventually("the event is delivered", timeout: .seconds(60)) {
                try await Self.status(client, location, when: "delivered")
            }
            let deliveredAt = try #require(status["updated_at"]?.stringValue.flatMap(EventInput.parseISO8601)).timeIntervalSince1970
            #expect(deliveredAt >= sendAt, "not before its instant")
            #expect(status["held_until"] == nil)
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
            #expect(daemon.standardOutput.filter { $0.contains("see you tomorrow") }.count == 1, "sent once: \(daemon.standardOutput)")
        }
    }

    /// A send posted again under its replace key replaces the one waiting; a cancel route
    /// withdraws one; each withdrawn event's status says why, and only the last is sent.
    @Test(arguments: IdempotentAcceptTests.StoreKind.allCases)
    func aPendingSendIsReplacedOrCancelledByItsKey(_ kind: IdempotentAcceptTests.StoreKind) async throws {
        guard let store = try await EventStatusTests.store(kind) else { return }
        let directory = try TemporaryDirectory("timing-replace-\(kind)")
        defer { directory.remove() }
        try directory.write("pipelines/timed.yaml", Self.pipeline)
        let arguments = ["run", "--listen", "127.0.0.1:0", "--admin-listen", "off", "--store", store, "--plugins", "none"]
        try await DaemonProcess.run(arguments: arguments, directory: directory.path) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            #expect(try await client.request("POST", "/register", json: ["user_id": "ana", "device_token": .string(Self.token)]).status == 200)
            func post(_ text: String, key: String, in seconds: Double) async throws -> String {
                let at = EventRecord.timestamp((Date().timeIntervalSince1970 + seconds).rounded(.up))
                let accepted = try await client.request(
                    "POST",
                    "/events",
                    json: ["user": "ana", "text": .string(text), "send_at": .string(at), "reminder_id": .string(key)],
                    headers: Self.backend
                )
                #expect(accepted.status == 202)
                let location = try #require(accepted.headers["location"])
                _ = try await eventually("\(text) is scheduled") { try await Self.status(client, location, when: "scheduled") }
                return location
            }
            let first = try await post("first draft", key: "r1", in: 120)
            let second = try await post("final reminder", key: "r1", in: 8)
            let replaced = try #require(try await Self.status(client, first, when: "dropped"))
            #expect(replaced["code"] == "replaced", "\(replaced)")
            let other = try await post("never mind", key: "r2", in: 120)
            let cancelled = try await client.request("DELETE", "/events/scheduled/r2", headers: Self.backend)
            #expect(cancelled.status == 200 && cancelled.body?["cancelled"] == 1, "\(cancelled.text)")
            #expect(try await Self.status(client, other, when: "dropped")?["code"] == "cancelled")
            let again = try await client.request("DELETE", "/events/scheduled/r2", headers: Self.backend)
            #expect(again.status == 404 && again.body?["field"] == "key", "\(again.text)")
            #expect(try await client.request("DELETE", "/events/scheduled/r1").status == 401)
            _ = try await eventually("the final reminder is delivered", timeout: .seconds(60)) {
                try await Self.status(client, second, when: "delivered")
            }
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
            let output = daemon.standardOutput.joined(separator: "\n")
            #expect(output.contains("final reminder"))
            #expect(!output.contains("first draft") && !output.contains("never mind"), "\(output)")
        }
    }

    /// One too many reads as such in its status: `throttled` past a pipeline's limit per key,
    /// `capped` past a limit per person that another pipeline's sends count towards.
    @Test(arguments: IdempotentAcceptTests.StoreKind.allCases)
    func eventsOverALimitAreThrottledOrCappedInTheirStatus(_ kind: IdempotentAcceptTests.StoreKind) async throws {
        guard let store = try await EventStatusTests.store(kind) else { return }
        let directory = try TemporaryDirectory("timing-limits-\(kind)")
        defer { directory.remove() }
        let cap = "{type: timing.cap, name: people, rules: [{limit: 2, period: 1h}]}"
        try directory.write(
            "pipelines/chat.yaml",
            """
            pipeline: chat
            routes:
              - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: device_token}
            sources:
              - {type: http.event, path: /chat, user_field: user, auth: {type: token, token: backend-secret}}
            filters:
              - {type: timing.throttle, limit: 1, period: 1h, key_field: thread}
              - \(cap)
            renderer: {type: json.template, token_kind: device, payload: {text: "{{text}}"}}
            transport: {type: stdout}
            """
        )
        try directory.write(
            "pipelines/news.yaml",
            """
            pipeline: news
            sources:
              - {type: http.event, path: /news, user_field: user, auth: {type: token, token: backend-secret}}
            filters:
              - \(cap)
            renderer: {type: json.template, token_kind: device, payload: {text: "{{text}}"}}
            transport: {type: stdout}
            """
        )
        let arguments = ["run", "--listen", "127.0.0.1:0", "--admin-listen", "off", "--store", store, "--plugins", "none"]
        try await DaemonProcess.run(arguments: arguments, directory: directory.path) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            #expect(try await client.request("POST", "/register", json: ["user_id": "ana", "device_token": .string(Self.token)]).status == 200)
            func post(_ path: String, _ text: String, thread: String = "") async throws -> JSON {
                let accepted = try await client.request(
                    "POST",
                    path,
                    json: ["user": "ana", "text": .string(text), "thread": .string(thread)],
                    headers: Self.backend
                )
                #expect(accepted.status == 202, "\(accepted.text)")
                let location = try #require(accepted.headers["location"])
                return try await eventually("\(text) is done") {
                    let body = try await client.request("GET", location, headers: Self.backend).body
                    return ["accepted", "processing"].contains(body?["state"]?.stringValue) ? JSON?.none : body
                }
            }
            #expect(try await post("/chat", "first in t1", thread: "t1")["state"] == "delivered")
            let throttled = try await post("/chat", "second in t1", thread: "t1")
            #expect(throttled["state"] == "throttled" && throttled["code"] == "throttled", "\(throttled)")
            #expect(try await post("/chat", "first in t2", thread: "t2")["state"] == "delivered")
            let capped = try await post("/news", "headline")
            #expect(capped["state"] == "capped" && capped["code"] == "capped", "two for ana this hour already, from chat: \(capped)")
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
            let output = daemon.standardOutput.joined(separator: "\n")
            #expect(output.contains("first in t2") && !output.contains("second in t1") && !output.contains("headline"), "\(output)")
        }
    }

    @Test func aTimeZoneThatIsNotOneIsRefusedAndChangesNothing() async throws {
        let directory = try TemporaryDirectory("timing-zone")
        defer { directory.remove() }
        try directory.write("pipelines/timed.yaml", Self.pipeline)
        let arguments = ["run", "--listen", "127.0.0.1:0", "--admin-listen", "off", "--store", "sqlite:state.sqlite", "--plugins", "none"]
        try await DaemonProcess.run(arguments: arguments, directory: directory.path) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            let set = try await client.request("PATCH", "/settings/ana", json: ["time_zone": "Europe/Berlin"])
            #expect(set.status == 200 && set.body?["settings"]?["time_zone"] == "Europe/Berlin", "\(set.text)")
            for zone: JSON in ["Mars/Olympus", "GMT+5", "", "Europe/Berlin\u{0}", .string(String(repeating: "A/", count: 100)), 3, ["Europe/Berlin"]]
            {
                let refused = try await client.request("PATCH", "/settings/ana", json: ["time_zone": zone, "enabled": false])
                #expect(refused.status == 422 && refused.body?["field"] == "time_zone", "\(zone): \(refused.status) \(refused.text)")
            }
            for quiet: JSON in ["25:00-07:00", "00:00-24:00", "22:00", "night", 22] {
                let refused = try await client.request("PATCH", "/settings/ana", json: ["quiet_hours": quiet])
                #expect(refused.status == 422 && refused.body?["field"] == "quiet_hours", "\(quiet): \(refused.text)")
            }
            let unchanged = try await client.request("PATCH", "/settings/ana", json: ["enabled": true])
            #expect(unchanged.body?["settings"] == ["time_zone": "Europe/Berlin", "enabled": true], "\(unchanged.text)")
            // A device's zone at registration: refused with nothing stored, or kept for the user.
            let refused = try await client.request(
                "POST",
                "/register",
                json: ["user_id": "ana", "device_token": .string(Self.token), "time_zone": "Moon/Base"]
            )
            #expect(refused.status == 422 && refused.body?["field"] == "time_zone", "\(refused.text)")
            let diagnostics = try await client.request("GET", "/diagnostics/ana")
            #expect(diagnostics.status == 404, "no token stored: \(diagnostics.text)")
            let registered = try await client.request(
                "POST",
                "/register",
                json: ["user_id": "ana", "device_token": .string(Self.token), "time_zone": "Asia/Tokyo"]
            )
            #expect(registered.status == 200)
            let settings = try await client.request("PATCH", "/settings/ana", json: ["enabled": true])
            #expect(settings.body?["settings"]?["device_time_zone"] == "Asia/Tokyo", "\(settings.text)")
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
        }
    }
}
