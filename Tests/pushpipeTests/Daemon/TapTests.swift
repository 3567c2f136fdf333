import AsyncHTTPClient
import Foundation
import PushPipeCore
import PushPipeHTTP
import PushPipeTesting
import Testing

@Suite struct TapTests {
    static let pipeline = """
        pipeline: tapped
        routes:
          - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: token}
        sources:
          - {type: http.event, path: /events, user_field: user}
        filters:
          - {type: settings.enabled}
        renderer: {type: json.template, payload: {title: "{{title}}", to: "{{user}}"}}
        transport: {type: stdout, format: compact}
        """

    /// `pushpipe tap` against a running daemon prints each stage's record as JSON lines,
    /// tokens masked everywhere.
    @Test func tapPrintsEachStageOfAnEventLive() async throws {
        let directory = try TemporaryDirectory("tap")
        defer { directory.remove() }
        try directory.write("pipelines/tapped.yaml", Self.pipeline)
        let token = String(repeating: "5e", count: 32)
        let arguments = ["run", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store", "sqlite:state.sqlite", "--plugins", "none"]
        try await DaemonProcess.run(arguments: arguments, directory: directory.path) { daemon in
            let api = HTTPTestClient(port: try await daemon.port())
            let adminPort = try await daemon.adminPort()
            #expect(try await api.request("POST", "/register", json: ["user_id": "ada", "token": .string(token)]).status == 200)
            let tapArguments = ["tap", "--admin", "http://127.0.0.1:\(adminPort)", "--pipeline", "tapped", "--limit", "5"]
            let lines = try await DaemonProcess.run(arguments: tapArguments, directory: directory.path) { tap in
                try await tap.waitForLine(containing: "pushpipe tap: connected")
                #expect(try await api.request("POST", "/events", json: ["user": "ada", "title": "Hello"]).status == 202)
                #expect(try await tap.waitForExit() == 0, "the tap stops by itself after --limit records")
                return tap.standardOutput
            }
            let records = try lines.map { try JSON.parse($0) }
            #expect(records.map { $0["what"]?.stringValue ?? "" } == ["event", "pass", "rendered", "request", "outcome"])
            #expect(records.map { $0["stage"]?.stringValue ?? "" } == ["sources[0]", "filters[0]", "renderer", "transport", "transport"])
            #expect(Set(records.compactMap { $0["event"]?.stringValue }).count == 1, "one event, followed through")
            #expect(records[2]["payload"] == ["title": "Hello", "to": "ada"])
            #expect(records[2]["token"] == "5e5e5e5e…")
            #expect(records[4]["outcome"] == "delivered")
            #expect(!lines.joined().contains(token), "the full token never leaves the daemon")
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
        }
    }

    /// A tap that does not read loses records, counted, and never holds up the publisher.
    @Test func aTapThatDoesNotReadDropsAndCounts() async throws {
        let telemetry = Telemetry.prometheus()
        var built = 0
        telemetry.tap.publish(pipeline: "p", stage: "renderer") {
            built += 1
            return [:]
        }
        #expect(built == 0, "nothing is built while nobody listens")
        let slow = try #require(telemetry.tap.subscribe(.init(pipeline: "p"), buffer: 2))
        let elsewhere = try #require(telemetry.tap.subscribe(.init(pipeline: "other"), buffer: 2))
        for index in 0..<5 { telemetry.tap.publish(pipeline: "p", stage: "filters[0]") { ["n": .int(Int64(index))] } }
        #expect(slow.takeMissed() == 3)
        #expect(elsewhere.takeMissed() == 0)
        #expect(telemetry.exposition().contains("pushpipe_tap_records_dropped_total 3"))
        var received: [JSON] = []
        telemetry.tap.unsubscribe(slow)
        for await record in slow.records { received.append(record) }
        #expect(received == [["n": 0], ["n": 1]], "the oldest records are kept, in order")
        // A stage filter matches the stage and, as a prefix, the stages of a list.
        let filters = try #require(telemetry.tap.subscribe(.init(stage: "filters"), buffer: 8))
        telemetry.tap.publish(pipeline: "p", stage: "filters[1]") { ["n": 1] }
        telemetry.tap.publish(pipeline: "p", stage: "renderer") { ["n": 2] }
        telemetry.tap.unsubscribe(filters)
        var matched: [JSON] = []
        for await record in filters.records { matched.append(record) }
        #expect(matched == [["n": 1]])
        telemetry.tap.unsubscribe(elsewhere)
        #expect(!telemetry.tap.isListening)
    }

    /// The slot of a tap that went away (killed, so it never said so) is free again within the
    /// `Retry-After` the refused tap was told, not heartbeats later; a wrong token is told as
    /// refused, not as missing.
    @Test func aGoneTapsSlotIsFreeWithinTheRetryAfterTold() async throws {
        let directory = try TemporaryDirectory("tap-slots")
        defer { directory.remove() }
        try directory.write("pipelines/tapped.yaml", Self.pipeline)
        let token = "tap-" + UUID().uuidString
        let arguments = [
            "run", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store", "sqlite:state.sqlite", "--plugins", "none",
            "--admin-max-taps", "1",
        ]
        try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: ["PUSHPIPE_ADMIN_TOKEN": token]) { daemon in
            let admin = "http://127.0.0.1:\(try await daemon.adminPort())"
            /// One `pushpipe tap`: the line that says whether it streams, then it is killed.
            @Sendable func tap(token: String) async throws -> String {
                try await DaemonProcess.run(
                    arguments: ["tap", "--admin", admin, "--limit", "1"],
                    directory: directory.path,
                    environment: ["PUSHPIPE_ADMIN_TOKEN": token]
                ) { tap in
                    try await tap.waitForLine(containing: "\(admin)")
                }
            }
            let wrong = try await tap(token: "not-" + token)
            #expect(wrong.contains("refused the token in PUSHPIPE_ADMIN_TOKEN") && !wrong.contains("set PUSHPIPE_ADMIN_TOKEN"), "\(wrong)")

            #expect(try await tap(token: token).contains("connected to"), "the first tap streams, and is killed")
            let gone = ContinuousClock.now
            let refused = try await tap(token: token)
            guard let told = refused.firstMatch(of: /try again in (\d+) s/).flatMap({ Int($0.1) }) else {
                // On a loaded machine the next tap's process may start after the slot was freed.
                #expect(refused.contains("connected to"), "\(refused)")
                daemon.signal(SIGTERM)
                #expect(try await daemon.waitForExit() == 0)
                return
            }
            #expect(told <= 5)
            // Probes from this process, not a `pushpipe tap` each, whose start on a loaded machine
            // would be counted as the daemon's wait.
            var admitted = false
            while !admitted, ContinuousClock.now - gone < .seconds(told + 30) {
                admitted = try await Self.tapAdmits(admin: admin, token: token)
                if !admitted { try await Task.sleep(for: .milliseconds(100)) }
            }
            let waited = ContinuousClock.now - gone
            // 4 s of slack for a loaded machine, still short of two 5 s heartbeats.
            #expect(admitted && waited <= .seconds(told + 4), "the slot was free after \(waited), the refused tap was told \(told) s")
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
        }
    }

    /// Whether the daemon's admin listener takes one more tap now (200) or refuses it (429); an
    /// admitted probe is closed at once, which frees its slot again.
    static func tapAdmits(admin: String, token: String) async throws -> Bool {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var request = HTTPClientRequest(url: admin + "/tap")
        request.headers.add(name: "authorization", value: "Bearer \(token)")
        let code: UInt
        do {
            code = try await client.execute(request, timeout: .seconds(30)).status.code
        } catch {
            try? await client.shutdown()
            throw error
        }
        try? await client.shutdown()
        #expect(code == 200 || code == 429, "HTTP \(code)")
        return code == 200
    }
}
