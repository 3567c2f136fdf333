import Foundation
import GRDB
import PushPipeCore
import PushPipeTesting
import Testing

/// Real signals to the real daemon.
@Suite(.serialized) struct DaemonSignalTests {
    static func pipeline(extraRoute: String = "") -> String {
        """
        pipeline: signals
        routes:
          - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: device_token}
        \(extraRoute)
        sources:
          - {type: http.event, path: /events}
        renderer: {type: json.template, payload: {n: {$from: n}}}
        transport: {type: stdout}
        """
    }

    @Test func sighupWithABrokenFileKeepsTheOldPipelineRunning() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try directory.write("pipelines/signals.yaml", Self.pipeline())
        // A second pipeline that does not change: a reload must leave it running.
        try directory.write(
            "pipelines/steady.yaml",
            """
            pipeline: steady
            sources: [{type: http.event, path: /steady/events}]
            renderer: {type: json.template, payload: {}}
            transport: {type: stdout}
            """
        )
        try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"],
            directory: directory.path
        ) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            let registration: JSON = ["user_id": "u", "device_token": .string(String(repeating: "0f", count: 32))]
            #expect(try await client.request("POST", "/register", json: registration).status == 200)

            try "pipeline: signals\nsources: [{type: http.event, path: /events}\n".write(toFile: file, atomically: true, encoding: .utf8)
            daemon.signal(SIGHUP)
            try await daemon.waitForLine(containing: "reload rejected")
            #expect(daemon.standardError.contains { $0.contains("signals.yaml:") && $0.contains("yaml-syntax") }, "every diagnostic is logged")
            #expect(try await client.request("POST", "/register", json: registration).status == 200)
            #expect(try await client.request("GET", "/users/u").status == 404)

            let extra = "  - {action: users-by-token, path: /users/:device_token}"
            try Self.pipeline(extraRoute: extra).write(toFile: file, atomically: true, encoding: .utf8)
            daemon.signal(SIGHUP)
            // Which pipelines restarted is what the log tells an operator: the lines are under test.
            try await daemon.waitForLine(containing: "reloaded: signals")
            let users = try await client.request("GET", "/users/\(String(repeating: "0f", count: 32))")
            #expect(users.body?["user_ids"] == ["u"], "the changed pipeline serves its new route and kept its data")
            #expect(daemon.standardError.contains { $0.contains("stopping pipeline signals (changed)") })
            #expect(!daemon.standardError.contains { $0.contains("stopping pipeline steady") }, "only changed pipelines restart")
        }
    }

    @Test func sigtermDrainsAcceptedEventsBeforeExiting() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // A slow transport plugin: each delivery takes 200 ms.
        try directory.write(
            "plugins/slow/slow.py",
            """
            import json, sys, time
            for line in sys.stdin:
                request = json.loads(line)
                if request["type"] == "send":
                    print("sending %s" % request["request"]["body"]["n"], file=sys.stderr, flush=True)
                    time.sleep(0.2)
                print(json.dumps({"id": request["id"], "result": {"outcome": "delivered", "provider_id": "slow-%s" % request["id"]}}), flush=True)
            """
        )
        try directory.write("plugins/slow/plugin.yaml", "name: slow\nkind: transport\ncommand: [python3, slow.py]\n")
        try directory.write(
            "pipelines/signals.yaml",
            Self.pipeline()
                .replacingOccurrences(of: "transport: {type: stdout}", with: "transport: {type: slow}\ndelivery: {concurrency: 2}")
        )
        let accepted = try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "plugins"],
            directory: directory.path
        ) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            for user in ["a", "b", "c"] {
                _ = try await client.request(
                    "POST",
                    "/register",
                    json: ["user_id": .string(user), "device_token": .string(String(repeating: "ab", count: 16) + user.hexPadding)]
                )
            }
            let accepted = try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 0..<6 {
                    group.addTask {
                        // A request racing the shutdown may go unanswered: it is then simply not accepted.
                        let response = try? await client.request(
                            "POST",
                            "/events",
                            json: ["user": .string(["a", "b", "c"][n % 3]), "n": .int(Int64(n))],
                            timeout: 5
                        )
                        return response?.status == 202 ? 1 : 0
                    }
                }
                try await daemon.waitForLine(containing: "sending")
                daemon.signal(SIGTERM)
                return try await group.reduce(0, +)
            }
            #expect(try await daemon.waitForExit() == 0)
            #expect(daemon.standardError.contains { $0.contains("store closed") })
            return accepted
        }
        let queue = try DatabaseQueue(path: directory.file("state.sqlite"))
        let delivered = try await queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM deliveries WHERE outcome = 'delivered'") }
        #expect(accepted >= 1)
        #expect(delivered == accepted, "every accepted event was delivered before exit")
        #expect(
            try await queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM work WHERE kind LIKE 'event:%'") } == 0,
            "and none is left to send again"
        )
    }
}

extension DaemonSignalTests {
    /// SIGTERM while the pipeline is full. The requests waiting for room are handlers the
    /// listener waits for, so the pipelines stop first: each waiting request is answered (503,
    /// or 202 for what was accepted) and the daemon exits within its drain timeout.
    @Test func sigtermWhileThePipelineIsFullAnswersTheWaitingRequestsAndExits() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // A transport that never answers: its one worker holds the pipeline full.
        try directory.write(
            "plugins/stuck/stuck.py",
            """
            import json, os, sys, time
            parent = os.getppid()
            for line in sys.stdin:
                request = json.loads(line)
                if request["type"] == "send":
                    print("stuck on %s" % request["request"]["body"]["n"], file=sys.stderr, flush=True)
                    # Stuck for as long as the daemon lives, and no longer: it outlives no test.
                    while os.getppid() == parent:
                        time.sleep(0.1)
                    sys.exit(0)
                print(json.dumps({"id": request["id"], "result": {"outcome": "delivered"}}), flush=True)
            """
        )
        try directory.write("plugins/stuck/plugin.yaml", "name: stuck\nkind: transport\ncommand: [python3, stuck.py]\n")
        try directory.write(
            "pipelines/signals.yaml",
            Self.pipeline()
                .replacingOccurrences(
                    of: "transport: {type: stdout}",
                    with: "transport: {type: stuck}\ndelivery: {concurrency: 1, drain_timeout: 2s}"
                )
        )
        try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "plugins"],
            directory: directory.path
        ) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            let admin = HTTPTestClient(port: try await daemon.adminPort())
            _ = try await client.request("POST", "/register", json: ["user_id": "a", "device_token": .string(String(repeating: "ab", count: 16))])
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 0..<6 {
                    group.addTask {
                        let response = try? await client.request("POST", "/events", json: ["user": "a", "n": .int(Int64(n))], timeout: 60)
                        return response?.status ?? 0
                    }
                }
                try await daemon.waitForLine(containing: "stuck on")
                // The worker is stuck and the other requests wait for room. On a busy machine
                // some may not have reached the daemon yet: a request SIGTERM finds still
                // connecting is refused by a closed listener, which says nothing of the waiting ones.
                try await Self.waitUntilHeld(6, by: admin)
                daemon.signal(SIGTERM)
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            let started = ContinuousClock.now
            #expect(try await daemon.waitForExit(timeout: 90) == 0)
            #expect(ContinuousClock.now - started < .seconds(60), "exited within its drain timeout, give or take a busy machine")
            #expect(statuses.allSatisfy { [202, 503].contains($0) }, "every waiting request was answered: \(statuses)")
            #expect(statuses.contains(503), "those still waiting for room were refused: \(statuses)")
            // What was answered 202 is kept for the next start; what was refused was taken back.
            let queue = try DatabaseQueue(path: directory.file("state.sqlite"))
            let left = try await queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM work WHERE kind LIKE 'event:%'") }
            #expect(left == statuses.filter { $0 == 202 }.count, "\(left ?? -1) queued for \(statuses)")
            #expect(daemon.standardError.contains { $0.contains("store closed") })
        }
    }
}

extension DaemonSignalTests {
    /// Scrapes the daemon's gauges until its pipeline holds `count` events (in flight, or
    /// waiting for room): the daemon has read every request by then.
    static func waitUntilHeld(_ count: Int, by admin: HTTPTestClient) async throws {
        try await eventually("the daemon to hold \(count) events", timeout: .seconds(60)) {
            let samples = prometheusSamples(try await admin.request("GET", "/metrics").text)
            let labels = #"pipeline="signals""#
            let held = (samples["pushpipe_events_queued{\(labels)}"] ?? 0) + (samples["pushpipe_events_in_flight{\(labels)}"] ?? 0)
            return Int(held) >= count
        }
    }
}

extension String {
    /// Two hex digits derived from a short name, to make distinct test tokens.
    var hexPadding: String { String(format: "%02x", Int(unicodeScalars.first?.value ?? 0) % 256) }
}
