import Foundation
import PushPipePostgresTesting
import PushPipeTesting
import Testing

/// Several daemons on one PostgreSQL database, as real processes.
@Suite struct SharedDatabaseTests {
    /// The APNs transport of these tests' pipelines, configured by the stand-in's environment.
    static let apnsTransport = """
        transport:
          type: apns
          team_id: "${APNS_TEAM_ID}"
          key_id: "${APNS_KEY_ID}"
          key_path: "${APNS_KEY_PATH}"
          bundle_id: com.example.shared
          base_url: "${APNS_BASE_URL}"
          ca_file: "${PUSHPIPE_CA_FILE}"
        """

    static let pipeline = eventPipeline(lease: "2s", delivery: "concurrency: 8, drain_timeout: 1s")

    /// Events posted to `/events` (their `id` is the event id) for the user in `user`, as an APNs
    /// alert whose custom `id` lets the stand-in count deliveries per event.
    static func eventPipeline(name: String = "shared", title: String = "Shared", lease: String, delivery: String) -> String {
        """
        pipeline: \(name)
        routes:
          - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: device_token}
        sources:
          - {type: http.event, path: /events, id_field: id, lease: \(lease)}
        renderer: {type: apns.alert, title: \(title), body: "event {{id}}", custom: {id: {$from: id}}}
        \(apnsTransport)
        delivery: {\(delivery)}
        """
    }

    /// 1,000 events posted round-robin to three daemons; one is killed with SIGKILL midway.
    /// Every event is delivered; a duplicate is possible only for what the killed daemon had
    /// in flight (at most its `delivery.concurrency`).
    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func acceptedEventsSurviveTheLossOfADaemon() async throws {
        let directory = try TemporaryDirectory("shared")
        defer { directory.remove() }
        let (apns, apnsEnvironment) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "SHAREDTEAM", keyID: "SHAREDKEY1")
        let delivered = ObservedState([String: Int]())
        apns.answer { request in
            if let id = request.body?["id"]?.stringValue { delivered.update { $0[id, default: 0] += 1 } }
            return .delayed(.seconds(0.02), .accept)
        }
        try directory.write("pipelines/shared.yaml", Self.pipeline)
        let url = try await TestStores.freshPostgresURL()
        let arguments = ["run", "--listen", "127.0.0.1:0", "--store", url, "--plugins", "none"]
        let run = { @Sendable (body: @Sendable @escaping (DaemonProcess) async throws -> Void) in
            try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: apnsEnvironment) { try await body($0) }
        }
        let events = 1000
        try await withCleanup(
            {
                try await run { first in
                    try await run { second in
                        try await run { third in
                            let clients = [try await first.port(), try await second.port(), try await third.port()].map(HTTPTestClient.init(port:))
                            let registered = try await clients[0].request(
                                "POST",
                                "/register",
                                json: ["user_id": "alice", "device_token": .string(String(repeating: "ab", count: 32))]
                            )
                            #expect(registered.status == 200)
                            var accepted = 0
                            for number in 0..<events {
                                if number == events / 2 {
                                    second.signal(SIGKILL)
                                    _ = try await second.waitForExit()
                                }
                                var daemon = number % 3
                                if number >= events / 2 && daemon == 1 { daemon = 2 }
                                let response = try await clients[daemon].request(
                                    "POST",
                                    "/events",
                                    json: ["user": "alice", "id": .string("e\(number)")]
                                )
                                if response.status == 202 { accepted += 1 }
                            }
                            #expect(accepted == events)
                            // The killed daemon's unfinished events are taken over once their 2 s lease ran out.
                            try await delivered.wait(
                                timeout: 60,
                                { $0.count >= events ? () : nil },
                                failure: { WaitTimedOut("\($0.count) of \(events) events delivered") }
                            )
                        }
                    }
                }
            },
            cleanup: apns.stop
        )
        let counts = delivered.value
        #expect(counts.count == events, "every event delivered")
        let extra = counts.values.reduce(0) { $0 + $1 - 1 }
        #expect(extra <= 8, "duplicates only for what the killed daemon had in flight: \(extra)")
    }

    /// 120 OGS players across three daemons: each is checked once per interval in total (not
    /// once per daemon); a daemon killed with SIGKILL leaves its players to the others.
    /// The shortest time between two checks of the same player.
    func shortestGap(_ requests: ArraySlice<(player: Int64, at: ContinuousClock.Instant)>) -> Duration {
        var last: [Int64: ContinuousClock.Instant] = [:]
        var shortest = Duration.seconds(3600)
        for request in requests {
            if let previous = last[request.player] { shortest = min(shortest, request.at - previous) }
            last[request.player] = request.at
        }
        return shortest
    }

    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func pollersShareTheirUsersAndOutliveADaemon() async throws {
        let directory = try TemporaryDirectory("shared-ogs")
        defer { directory.remove() }
        let (apns, apnsEnvironment) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "SHAREDTEAM", keyID: "SHAREDKEY1")
        let ogs = try await OGSStandIn.start()
        let pipeline = try String(contentsOf: SvenFlowTests.repository.appendingPathComponent("pipelines/ogs-turns.yaml"), encoding: .utf8)
        try directory.write("pipelines/ogs-turns.yaml", pipeline)
        let url = try await TestStores.freshPostgresURL()
        let arguments = ["run", "--listen", "127.0.0.1:0", "--store", url, "--plugins", "none"]
        let environment = apnsEnvironment.merging(["OGS_API_BASE": ogs.baseURL, "CHECK_INTERVAL_SECONDS": "2"]) { _, new in new }
        let run = { @Sendable (body: @Sendable @escaping (DaemonProcess) async throws -> Void) in
            try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { try await body($0) }
        }
        // 120 players at a 2 s interval: 60 checks/s, well within two daemons.
        let players = (0..<120).map { Int64(5000 + $0) }
        /// Checks per player among the requests OGS received from `start` on.
        @Sendable func checks(from start: Int) -> [Int64: Int] {
            ogs.requests.dropFirst(start).reduce(into: [:]) { $0[$1, default: 0] += 1 }
        }
        try await withCleanup(
            {
                try await run { first in
                    try await run { second in
                        try await run { third in
                            let client = HTTPTestClient(port: try await first.port())
                            _ = try await second.port()
                            _ = try await third.port()
                            for player in players {
                                // The route's per-client limit (50/s, a burst of 20) answers 429 to a fast
                                // loop: it waits the Retry-After it is told, as a client would.
                                var response = try await client.request(
                                    "POST",
                                    "/register",
                                    json: [
                                        "user_id": .int(player),
                                        "device_token": .string(String(repeating: "ab", count: 32)),
                                    ]
                                )
                                while response.status == 429 {
                                    try await Task.sleep(for: .seconds(Double(response.headers["retry-after"] ?? "1") ?? 1))
                                    response = try await client.request(
                                        "POST",
                                        "/register",
                                        json: [
                                            "user_id": .int(player),
                                            "device_token": .string(String(repeating: "ab", count: 32)),
                                        ]
                                    )
                                }
                                #expect(response.status == 200)
                            }
                            // Let every player come due once, then count three intervals' worth of checks.
                            _ = try await ogs.waitForRequests(players.count * 2, timeout: 30)
                            let start = ogs.requests.count
                            _ = try await ogs.waitForRequests(start + players.count * 3, timeout: 30)
                            var window = checks(from: start)
                            // On a loaded machine a check may come late: wait for it (bounded) rather
                            // than count a fixed number of requests.
                            let late = ContinuousClock.now + .seconds(60)
                            while window.count < players.count, ContinuousClock.now < late {
                                _ = try await ogs.waitForRequests(ogs.requests.count + 1, timeout: 30)
                                window = checks(from: start)
                            }
                            #expect(window.count == players.count, "every player is checked")
                            // Three daemons checking on their own would check a player every 2/3 s, and two
                            // claiming one player at once would check it twice within milliseconds. A check
                            // that came late on a loaded machine, followed by the next on its schedule, is neither.
                            let shortest = shortestGap(ogs.timedRequests.dropFirst(start))
                            #expect(shortest >= .milliseconds(1000), "once per 2 s interval in total, not once per daemon: \(shortest)")

                            second.signal(SIGKILL)
                            _ = try await second.waitForExit()
                            // The killed daemon's players come due for the others an interval after it claimed them.
                            let killed = ContinuousClock.now
                            try await ogs.waitForRequests(from: Set(players), after: ogs.requests.count, timeout: 60)
                            let took = ContinuousClock.now - killed
                            // A claim lasts an interval; the bound says "taken over", with room for a loaded machine.
                            #expect(took < .seconds(45), "every player checked again \(took) after the kill (interval 2 s)")
                        }
                    }
                }
            },
            cleanup: {
                await apns.stop()
                await ogs.stop()
            }
        )
    }

    /// The daemon on PostgreSQL: the pool runs in the service group and stops last, so a
    /// SIGTERM drains the pipelines with the store still there; the password is never shown.
    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func aDaemonOnPostgresDrainsAtSIGTERMAndNeverShowsThePassword() async throws {
        let directory = try TemporaryDirectory("postgres-daemon")
        defer { directory.remove() }
        try directory.write(
            "pipelines/p.yaml",
            """
            pipeline: p
            routes:
              - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: device_token}
              - {action: history, path: /history/:user_id, user_param: user_id}
            sources:
              - {type: http.event, path: /events}
            renderer: {type: json.template, payload: {title: "{{title}}"}}
            transport: {type: stdout}
            """
        )
        let location = try await TestStores.freshPostgresDatabase()
        let secret = "pw-\(UUID().uuidString.prefix(8))"
        let url = "postgres://\(location.user):\(secret)@\(location.host):\(location.port)/\(location.database)?sslmode=disable"
        try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--plugins", "none"],
            directory: directory.path,
            environment: ["PUSHPIPE_STORE": url]
        ) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            #expect(
                try await client.request(
                    "POST",
                    "/register",
                    json: ["user_id": "alice", "device_token": .string(String(repeating: "ab", count: 16))]
                ).status == 200
            )
            #expect(try await client.request("POST", "/events", json: ["user": "alice", "title": "hi"]).status == 202)
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
            let output = daemon.standardError + daemon.standardOutput
            #expect(output.contains { $0.contains("stopped; store closed") })
            #expect(output.contains { $0.contains("store: postgres://\(location.user):•••@") })
            #expect(!output.contains { $0.contains(secret) }, "the password never reaches a log")
        }
        // What the first daemon accepted it also delivered and recorded before it stopped.
        try await DaemonProcess.run(arguments: ["run", "--listen", "127.0.0.1:0", "--plugins", "none", "--store", url], directory: directory.path) {
            daemon in
            let history = try await HTTPTestClient(port: try await daemon.port()).request("GET", "/history/alice")
            #expect(history.body?["history"]?.arrayValue?.count == 1, "\(history.text)")
        }
    }
}
