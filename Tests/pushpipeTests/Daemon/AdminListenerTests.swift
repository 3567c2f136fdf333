import Foundation
import PushPipeCore
import PushPipeTesting
import Synchronization
import Testing

/// The admin listener of a real daemon, driven through the APNs stand-in: `/metrics` must
/// say what happened, `/readyz` must say whether it can send.
@Suite struct AdminListenerTests {
    static let pipeline = """
        pipeline: observed
        routes:
          - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: token}
          - {action: settings, path: /settings/:user_id, user_param: user_id, keys: {enabled: boolean}}
        sources:
          - {type: http.event, path: /events, user_field: user, wait: true}
        filters:
          - {type: settings.enabled}
        renderer: {type: apns.alert, title: "{{title}}"}
        transport:
          type: apns
          team_id: "${APNS_TEAM_ID}"
          key_id: "${APNS_KEY_ID}"
          key_path: "${APNS_KEY_PATH}"
          bundle_id: com.example.observed
          base_url: "${APNS_BASE_URL}"
          ca_file: "${PUSHPIPE_CA_FILE}"
        delivery: {attempts: 3, backoff: 10ms}
        """

    static let tokens = [
        "good": String(repeating: "a1", count: 32), "dead": String(repeating: "d2", count: 32),
        "flaky": String(repeating: "f3", count: 32), "quiet": String(repeating: "c4", count: 32),
    ]

    /// Also `--log-format json`: every line an object, the dead token's with its pipeline,
    /// stage, event and masked token.
    @Test func metricsCountWhatHappenedAndHealthAnswersOnBothListeners() async throws {
        let directory = try TemporaryDirectory("admin")
        defer { directory.remove() }
        let (standIn, environment) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "OBSTEAM001", keyID: "OBSKEY0001")
        // The dead token is gone (410); the flaky one fails once (503), then goes through.
        let flakyFailures = Mutex(1)
        standIn.answer { request in
            if request.token == Self.tokens["dead"] { return .reject(status: 410, reason: "Unregistered") }
            if request.token == Self.tokens["flaky"],
                flakyFailures.withLock({ left in
                    defer { left = max(0, left - 1) }
                    return left > 0
                })
            {
                return .reject(status: 503, reason: "ServiceUnavailable")
            }
            return .accept
        }
        try directory.write("pipelines/observed.yaml", Self.pipeline)
        let arguments = [
            "run", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store", "sqlite:state.sqlite", "--plugins", "none",
            "--log-format", "json",
        ]
        try await withCleanup(
            {
                try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { daemon in
                    let api = HTTPTestClient(port: try await daemon.port())
                    let admin = HTTPTestClient(port: try await daemon.adminPort())
                    for (user, token) in Self.tokens {
                        #expect(try await api.request("POST", "/register", json: ["user_id": .string(user), "token": .string(token)]).status == 200)
                    }
                    #expect(try await api.request("PATCH", "/settings/quiet", json: ["enabled": false]).status == 200)
                    // The app-facing listener serves health too, not metrics.
                    #expect(try await api.request("GET", "/healthz").status == 200)
                    #expect(try await api.request("GET", "/metrics").status == 404)
                    try await Self.waitUntilReady(admin)
                    #expect(try await api.request("GET", "/readyz").status == 200)

                    for user in ["good", "dead", "flaky", "quiet"] {
                        let report = try await api.request("POST", "/events", json: ["user": .string(user), "title": "hi"])
                        #expect(report.status == 200)
                    }
                    let metrics = try await Self.scrape(admin)
                    let labels = #"pipeline="observed""#
                    #expect(metrics[#"pushpipe_events_received_total{\#(labels),stage="sources[0]"}"#] == 4)
                    #expect(
                        metrics[#"pushpipe_events_dropped_total{\#(labels),stage="filters[0]",type="settings.enabled",reason="setting_off"}"#] == 1
                    )
                    #expect(metrics[#"pushpipe_notifications_rendered_total{\#(labels),stage="renderer"}"#] == 3)
                    #expect(metrics[#"pushpipe_deliveries_total{\#(labels),transport="apns",outcome="delivered",reason=""}"#] == 2)
                    #expect(metrics[#"pushpipe_deliveries_total{\#(labels),transport="apns",outcome="dead_token",reason="Unregistered"}"#] == 1)
                    #expect(metrics[#"pushpipe_delivery_retries_total{\#(labels),transport="apns"}"#] == 1)
                    #expect(metrics[#"pushpipe_tokens_pruned_total{\#(labels)}"#] == 1)
                    #expect(metrics[#"pushpipe_delivery_latency_seconds_count{\#(labels),transport="apns"}"#] == 3)
                    #expect(metrics[#"pushpipe_provider_connections{\#(labels),transport="apns"}"#] == 1)
                    // Read at the scrape: the last event's worker may still be finishing.
                    #expect(metrics[#"pushpipe_events_queued{\#(labels)}"#] != nil && metrics[#"pushpipe_events_in_flight{\#(labels)}"#] != nil)
                    #expect((metrics[#"pushpipe_store_commit_seconds_count{store="sqlite"}"#] ?? 0) >= 1)
                    // The stand-in saw what the counters say: 2 accepted, 1 gone, 1 failed once and retried.
                    #expect(standIn.requests.count == 4)

                    // The status page shows the same, tokens masked.
                    let page = try await admin.request("GET", "/")
                    #expect(page.status == 200)
                    #expect(page.text.contains(#"id="pipeline-observed""#) && page.text.contains("<td>dead_token</td>") == false)
                    #expect(page.text.contains("<code>d2d2d2d2…</code></td><td class=\"bad\">dead_token</td><td>Unregistered</td>"))
                    #expect(page.text.contains("<code>a1a1a1a1…</code></td><td class=\"ok\">delivered</td>"))
                    #expect(!Self.tokens.values.contains { page.text.contains($0) })

                    // A reload that fails is counted, and changes nothing.
                    try directory.write("pipelines/observed.yaml", Self.pipeline.replacingOccurrences(of: "type: apns\n", with: "type: apnz\n"))
                    daemon.signal(SIGHUP)
                    try await eventually("the rejected reload to be counted") {
                        try await Self.scrape(admin)[#"pushpipe_reloads_total{result="rejected"}"#] == 1
                    }

                    try await daemon.waitForLine(containing: "removed dead device token")
                    let logs = try daemon.standardError.map { try JSON.parse($0) }
                    #expect(logs.allSatisfy { $0["level"] != nil && $0["message"] != nil && $0["time"] != nil })
                    let removal = try #require(logs.first { $0["message"]?.stringValue?.hasPrefix("removed dead device token") == true })
                    #expect(removal["pipeline"] == "observed")
                    #expect(removal["stage"] == "transport")
                    #expect(removal["token"] == "d2d2d2d2…")
                    #expect(removal["event"]?.stringValue?.count == 24)
                    #expect(!daemon.standardError.joined().contains(Self.tokens["dead"]!), "no full token in the logs")

                    let unknown = try await admin.request("GET", "/nothing")
                    #expect(unknown.status == 404)
                    #expect(unknown.body?["field"] == "path")
                    daemon.signal(SIGTERM)
                    #expect(try await daemon.waitForExit() == 0)
                }
            },
            cleanup: standIn.stop
        )
    }

    /// A live transport without its key is not ready, and says why on the admin listener only:
    /// the app listener faces the internet, and a key file's path is no business of a caller's.
    @Test func readinessNamesTheTransportThatCannotLoadItsCredentials() async throws {
        let directory = try TemporaryDirectory("admin")
        defer { directory.remove() }
        try directory.write("pipelines/observed.yaml", Self.pipeline)
        let environment = [
            "APNS_TEAM_ID": "OBSTEAM001", "APNS_KEY_ID": "OBSKEY0001", "APNS_KEY_PATH": directory.file("missing.p8"),
            "APNS_BASE_URL": "https://127.0.0.1:9", "PUSHPIPE_CA_FILE": "",
        ]
        let arguments = ["run", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store", "sqlite:state.sqlite", "--plugins", "none"]
        try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { daemon in
            let api = HTTPTestClient(port: try await daemon.port())
            let admin = HTTPTestClient(port: try await daemon.adminPort())
            #expect(try await admin.request("GET", "/healthz").status == 200)
            let ready = try await admin.request("GET", "/readyz")
            #expect(ready.status == 503)
            #expect(
                ready.body?["reasons"]?["pipeline observed transport"]?.stringValue?.contains("key_path") == true,
                "\(String(describing: ready.body))"
            )
            let answer = try await api.request("GET", "/readyz")
            #expect(answer.status == 503 && answer.body == ["status": "not ready", "error": "not ready"], "\(answer.text)")
            // The container's HEALTHCHECK: unhealthy, though alive.
            let url = "http://127.0.0.1:\(try await daemon.adminPort())"
            let notReady = try await ProbeCommandTests().probe(["--admin", url], in: directory)
            #expect(notReady.status == 1 && notReady.output.contains("answered HTTP 503"), "\(notReady.output)")
            #expect(try await ProbeCommandTests().probe(["--admin", url, "--live"], in: directory).status == 0)
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
        }
    }

    static func waitUntilReady(_ admin: HTTPTestClient) async throws {
        try await eventually("the daemon to answer /readyz with 200") { try await admin.request("GET", "/readyz").status == 200 }
    }

    /// Samples by series (`name{labels}`), parsed from the text format.
    static func scrape(_ admin: HTTPTestClient) async throws -> [String: Double] {
        let response = try await admin.request("GET", "/metrics")
        #expect(response.status == 200)
        return prometheusSamples(response.text)
    }
}
