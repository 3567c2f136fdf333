import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// The shipped Web Push pipeline end to end, to the same standard as the APNs and FCM flows:
/// a browser's subscription registered through the route, an event sent encrypted and signed to
/// a push service that offers HTTP/2, the tap and the metrics, a gone subscription pruned, a
/// dry run that shows the message in clear. No key material in any of it.
@Suite struct WebPushFlowTests {
    @Test func subscriptionsGetEncryptedMessagesAndGoneOnesArePruned() async throws {
        let directory = try TemporaryDirectory("webpush-flow")
        defer { directory.remove() }
        let authority = try TestCertificateAuthority()
        try authority.writeCACertificate(to: directory.file("ca.pem"))
        let service = try await WebPushStandIn.start(authority: authority, http2: true)
        let keyed = try await DaemonProcess.run(arguments: ["vapid", "generate", "vapid.pem"], directory: directory.path) {
            try await $0.waitForExit()
        }
        #expect(keyed == 0)
        try directory.write(
            "pipelines/webpush.yaml",
            try String(
                contentsOf: SvenFlowTests.repository.appendingPathComponent("pipelines/webpush.yaml"),
                encoding: .utf8
            )
        )
        let environment = [
            "WEBPUSH_JWT_SECRET": HTTPHostTests.secret, "WEBPUSH_EVENTS_TOKEN": "site-backend-secret",
            "VAPID_KEY_PATH": directory.file("vapid.pem"), "VAPID_SUBJECT": "mailto:ops@example.com",
            "PUSHPIPE_CA_FILE": directory.file("ca.pem"),
        ]
        let laptop = service.subscribe()
        let phone = service.subscribe()
        try await withCleanup(
            {
                let arguments = [
                    "run", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none",
                    "--allow-private-endpoint", service.origin,
                ]
                try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { daemon in
                    try await flow(
                        HTTPTestClient(port: try await daemon.port()),
                        admin: try await daemon.adminPort(),
                        service: service,
                        subscriptions: [laptop, phone],
                        daemon: daemon,
                        directory: directory
                    )
                }
                // The dry run on the same state: the message in clear, for the subscription left.
                try directory.write(
                    "event.json",
                    #"{"user": "ann", "body": {"user": "ann", "title": "Dry", "body": "run", "url": "https://example.com/d"}}"#
                )
                let dryRun = try await DaemonProcess.run(
                    arguments: [
                        "dry-run", "pipelines/webpush.yaml", "--event", "event.json", "--state", "state.sqlite",
                        "--plugins", "none",
                    ],
                    directory: directory.path,
                    environment: environment
                ) { process in
                    (try await process.waitForExit(), process.standardOutput)
                }
                #expect(dryRun.0 == 0)
                #expect(dryRun.1.contains { $0.contains("\"title\": \"Dry\"") })
                #expect(dryRun.1.contains("result: delivered"))
                #expect(service.messages.count == 3, "a dry run sends nothing")
                try expectNoKeyMaterial(dryRun.1.joined(separator: "\n"), of: [laptop, phone])

                // A dry-run daemon checks what apps register as the live one does: its printing
                // transport once hid the Web Push transport's checks, and a subscription pointing into
                // the operator's network was stored in the real state.
                try await DaemonProcess.run(arguments: arguments + ["--dry-run"], directory: directory.path, environment: environment) { daemon in
                    let client = HTTPTestClient(port: try await daemon.port())
                    try await eventually("the dry-run daemon to be ready") { try await client.request("GET", "/readyz").status == 200 }
                    var pointed = try #require(laptop.objectValue)
                    pointed["endpoint"] = "https://10.0.0.5/push/x"
                    let answer = try await client.request(
                        "POST",
                        "/web/subscriptions",
                        json: ["subscription": .object(pointed)],
                        headers: try await HTTPHostTests.bearer("ann")
                    )
                    #expect(answer.status == 400 && answer.body?["field"] == "subscription.endpoint", "\(answer.status) \(answer.text)")
                }
            },
            cleanup: service.stop
        )
    }

    func flow(
        _ client: HTTPTestClient,
        admin adminPort: Int,
        service: WebPushStandIn,
        subscriptions: [JSON],
        daemon: DaemonProcess,
        directory: TemporaryDirectory
    ) async throws {
        let ann = try await HTTPHostTests.bearer("ann")
        let backend = ["authorization": "Bearer site-backend-secret"]
        var insecure = try #require(subscriptions[0].objectValue)
        insecure["endpoint"] = .string(try #require(insecure["endpoint"]?.stringValue).replacingOccurrences(of: "https:", with: "http:"))
        let refused = try await client.request("POST", "/web/subscriptions", json: ["subscription": .object(insecure)], headers: ann)
        #expect(refused.status == 400 && refused.body?["field"] == "subscription.endpoint")
        // A web user may not point the daemon into the operator's network; the
        // stand-in's own origin is allowed by --allow-private-endpoint, nothing else private is.
        for endpoint in [
            "https://169.254.169.254/latest/meta-data/x", "https://10.0.0.5/push/x", "https://[::1]:8443/push/x",
            "https://localhost:1/push/x", "https://127.0.0.1:\(service.port)/push/x",
        ] {
            var pointed = try #require(subscriptions[0].objectValue)
            pointed["endpoint"] = .string(endpoint)
            let answer = try await client.request("POST", "/web/subscriptions", json: ["subscription": .object(pointed)], headers: ann)
            #expect(answer.status == 400 && answer.body?["field"] == "subscription.endpoint", "\(endpoint): \(answer.status) \(answer.text)")
        }
        for subscription in subscriptions {
            #expect(try await client.request("POST", "/web/subscriptions", json: ["subscription": subscription], headers: ann).status == 200)
        }

        let tapArguments = ["tap", "--admin", "http://127.0.0.1:\(adminPort)", "--pipeline", "webpush"]
        try await DaemonProcess.run(arguments: tapArguments, directory: directory.path) { tap in
            try await tap.waitForLine(containing: "pushpipe tap: connected")
            let event: JSON = ["user": "ann", "title": "Your turn", "body": "in Game 1", "url": "https://example.com/games/1"]
            #expect(try await client.request("POST", "/web/events", json: event, headers: backend).status == 202)
            let messages = try await service.waitForMessages(2)
            for message in messages {
                #expect(message.rejection == nil)
                #expect(message.json?["title"] == "Your turn" && message.json?["data"]?["url"] == "https://example.com/games/1")
                #expect(message.vapidSubject == "mailto:ops@example.com" && message.httpVersion == "HTTP/2.0")
            }
            try await tap.waitForLine(containing: #""what":"outcome""#, after: 1)
            let records = try tap.standardOutput.filter { $0.hasPrefix("{") }.map { try JSON.parse($0) }
            #expect(records.filter { $0["what"] == "outcome" }.allSatisfy { $0["outcome"] == "delivered" })
            let shown = records.filter { $0["what"] == "request" }.compactMap { $0["request"]?["url"]?.stringValue }
            #expect(shown.count == 2 && shown.allSatisfy { $0.hasPrefix("https://localhost:") && $0.hasSuffix("…") }, "\(shown)")
            try expectNoKeyMaterial(tap.standardOutput.joined(separator: "\n"), of: subscriptions)
        }
        var metrics = try await AdminListenerTests.scrape(HTTPTestClient(port: adminPort))
        let labels = #"pipeline="webpush",transport="webpush""#
        #expect(metrics[#"pushpipe_deliveries_total{\#(labels),outcome="delivered",reason=""}"#] == 2)

        // The phone's browser unsubscribed: its push service answers 410, and it is pruned.
        let phoneID = try #require(subscriptions[1]["endpoint"]?.stringValue?.split(separator: "/").last.map(String.init))
        service.unsubscribe(phoneID)
        #expect(
            try await client.request(
                "POST",
                "/web/events",
                json: ["user": "ann", "title": "Again", "body": "b", "url": "https://example.com/2"],
                headers: backend
            ).status == 202
        )
        try await eventually("the phone's subscription to be pruned") {
            try await AdminListenerTests.scrape(HTTPTestClient(port: adminPort))[#"pushpipe_tokens_pruned_total{pipeline="webpush"}"#] == 1
        }
        #expect(service.messages.count == 3, "only the laptop took the second message")
        #expect(!daemon.standardError.joined().contains(phoneID), "logs mask the subscription")
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }

    /// Neither a browser's keys nor a subscription's whole endpoint may be shown.
    func expectNoKeyMaterial(_ text: String, of subscriptions: [JSON]) throws {
        for subscription in subscriptions {
            for secret in [subscription["keys"]?["p256dh"], subscription["keys"]?["auth"], subscription["endpoint"]] {
                let value = try #require(secret?.stringValue)
                #expect(!text.contains(value), "\(value.prefix(12))… shown")
            }
        }
    }
}
