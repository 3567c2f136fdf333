import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// Outcome webhooks on real daemons and both stores, checked by an independent receiver: the
/// Standard Webhooks reference library (PyPI `standardwebhooks`) verifies every signature.
/// Outcomes are durable: a daemon killed while its receiver is down loses none of them.
@Suite(.serialized) struct WebhookTests {
    static let secret = "whsec_" + Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()

    /// Takes what verifies (200) unless a file `down` exists (503, with the file's text as
    /// `Retry-After` when it has one); prints each batch it took or refused.
    static let receiver = #"""
        import json, os, sys
        from http.server import BaseHTTPRequestHandler, HTTPServer
        from standardwebhooks.webhooks import Webhook
        hook = Webhook(os.environ["WEBHOOK_SECRET"])
        class Receiver(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                headers = {name.lower(): value for name, value in self.headers.items()}
                if os.path.exists("down"):
                    outcomes = sorted(outcome["id"] for outcome in json.loads(body)["data"]["outcomes"])
                    print("refused %s %s" % (headers.get("webhook-id"), ",".join(outcomes)), flush=True)
                    retry_after = open("down").read().strip()
                    self.send_response(503); self.send_header("content-length", "0")
                    if retry_after:
                        self.send_header("retry-after", retry_after)
                    self.end_headers()
                    return
                try:
                    message = hook.verify(body, headers)
                except Exception as error:
                    print("bad signature %s: %s" % (headers.get("webhook-id"), error), flush=True)
                    self.send_response(401); self.send_header("content-length", "0"); self.end_headers()
                    return
                for outcome in message["data"]["outcomes"]:
                    print("took %s %s %s" % (headers["webhook-id"], outcome["type"], outcome["id"]), flush=True)
                self.send_response(204); self.end_headers()
            def log_message(self, *arguments):
                pass
        server = HTTPServer(("127.0.0.1", 0), Receiver)
        print("listening on %d" % server.server_address[1], flush=True)
        server.serve_forever()
        """#

    static func pipeline(receiverPort: Int) -> String {
        EventStatusTests.pipeline + """

            webhooks:
              - {url: "http://127.0.0.1:\(receiverPort)/hooks", secret: "${WEBHOOK_SECRET}"}
            """
    }

    /// The outcome ids the receiver took, by type.
    static func taken(_ receiver: DaemonProcess) -> [String: Set<String>] {
        var taken: [String: Set<String>] = [:]
        for line in receiver.standardOutput where line.hasPrefix("took ") {
            let parts = line.split(separator: " ")
            taken[String(parts[2]), default: []].insert(String(parts[3]))
        }
        return taken
    }

    @Test(arguments: IdempotentAcceptTests.StoreKind.allCases)
    func outcomesSurviveASIGKILLAndAReceiverOutage(_ kind: IdempotentAcceptTests.StoreKind) async throws {
        guard let store = try await EventStatusTests.store(kind) else { return }
        guard await PythonPeer.hasModule("standardwebhooks", install: "standardwebhooks") else { return }
        let directory = try TemporaryDirectory("webhooks-\(kind)")
        defer { directory.remove() }
        try directory.write("receiver.py", Self.receiver)
        let (apns, apnsEnvironment) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "HOOKTEAM01", keyID: "HOOKKEY001")
        let gone = String(repeating: "dd", count: 32)
        apns.answer { request in request.token == gone ? .reject(status: 410, reason: "Unregistered", timestamp: 1) : .accept }
        let environment = apnsEnvironment.merging(["WEBHOOK_SECRET": Self.secret]) { _, new in new }
        try await withCleanup(
            {
                try await DaemonProcess.run(
                    arguments: [],
                    directory: directory.path,
                    environment: environment,
                    launcher: ["/usr/bin/env", "python3", "receiver.py"]
                ) { receiver in
                    let line = try await receiver.waitForLine(containing: "listening on")
                    let port = try #require(Int(line.split(separator: " ").last ?? ""))
                    try directory.write("pipelines/followed.yaml", Self.pipeline(receiverPort: port))
                    let daemonArguments = ["run", "--listen", "127.0.0.1:0", "--store", store, "--plugins", "none"]
                    let ids = try await DaemonProcess.run(arguments: daemonArguments, directory: directory.path, environment: environment) { daemon in
                        var ids: [String] = []
                        let client = HTTPTestClient(port: try await daemon.port())
                        for (user, token) in [("solo", EventStatusTests.good), ("leaver", gone)] {
                            let registered = try await client.request(
                                "POST",
                                "/register",
                                json: ["user_id": .string(user), "device_token": .string(token)]
                            )
                            #expect(registered.status == 200, "\(registered.status) \(registered.text)")
                        }
                        let first = try await client.request(
                            "POST",
                            "/events",
                            json: ["user": "solo", "text": "one"],
                            headers: EventStatusTests.backend
                        )
                        ids.append(try #require(first.body?["id"]?.stringValue))
                        try await receiver.waitForLine(containing: "followed/\(ids[0])/delivered")

                        // The receiver goes down; outcomes wait in the store while the daemon tries.
                        try directory.write("down", "")
                        for (user, text) in [("leaver", "two"), ("solo", "three")] {
                            let answer = try await client.request(
                                "POST",
                                "/events",
                                json: ["user": .string(user), "text": .string(text)],
                                headers: EventStatusTests.backend
                            )
                            ids.append(try #require(answer.body?["id"]?.stringValue))
                        }
                        try await receiver.waitForLine(containing: "refused")
                        daemon.signal(SIGKILL)
                        #expect(try await daemon.waitForExit() == 128 + SIGKILL)
                        return ids
                    }

                    // Back up, and a new daemon sends what the killed one could not.
                    try FileManager.default.removeItem(atPath: directory.file("down"))
                    try await DaemonProcess.run(arguments: daemonArguments, directory: directory.path, environment: environment) { _ in
                        // Taken ("took <id> <type> <outcome>"), not the refusals that name them too.
                        try await receiver.waitForLine(containing: "delivered followed/\(ids[2])/delivered", timeout: 60)
                        try await receiver.waitForLine(containing: "failed followed/\(ids[1])/failed", timeout: 60)
                        try await receiver.waitForLine(containing: "dead_token followed/\(ids[1])/dead_token", timeout: 60)
                    }
                    let taken = Self.taken(receiver)
                    #expect(taken["delivered"] == ["followed/\(ids[0])/delivered", "followed/\(ids[2])/delivered"])
                    #expect(taken["failed"] == ["followed/\(ids[1])/failed"])
                    #expect(taken["dead_token"]?.count == 1)
                    #expect(!receiver.standardOutput.contains { $0.hasPrefix("bad signature") }, "\(receiver.standardOutput)")
                }
            },
            cleanup: apns.stop
        )
    }

    /// A batch the receiver refused goes again under its `webhook-id` with the same outcomes,
    /// never merged with outcomes written since, so a receiver that drops the ids it saw (as the
    /// docs tell it to) takes each outcome once. `Retry-After: NaN` counts as none: the batch goes
    /// again after the daemon's backoff (1 s, 2 s…), not when its lease (20 s) runs out.
    @Test(arguments: IdempotentAcceptTests.StoreKind.allCases)
    func aRefusedBatchGoesAgainUnderItsOwnID(_ kind: IdempotentAcceptTests.StoreKind) async throws {
        guard let store = try await EventStatusTests.store(kind) else { return }
        guard await PythonPeer.hasModule("standardwebhooks", install: "standardwebhooks") else { return }
        let directory = try TemporaryDirectory("webhook-ids-\(kind)")
        defer { directory.remove() }
        try directory.write("receiver.py", Self.receiver)
        let (apns, apnsEnvironment) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "HOOKTEAM02", keyID: "HOOKKEY002")
        apns.answer { _ in .accept }
        let environment = apnsEnvironment.merging(["WEBHOOK_SECRET": Self.secret]) { _, new in new }
        try await withCleanup(
            {
                try await DaemonProcess.run(
                    arguments: [],
                    directory: directory.path,
                    environment: environment,
                    launcher: ["/usr/bin/env", "python3", "receiver.py"]
                ) { receiver in
                    let line = try await receiver.waitForLine(containing: "listening on")
                    let port = try #require(Int(line.split(separator: " ").last ?? ""))
                    try directory.write("pipelines/followed.yaml", Self.pipeline(receiverPort: port))
                    try directory.write("down", "NaN")
                    let daemonArguments = ["run", "--listen", "127.0.0.1:0", "--store", store, "--plugins", "none"]
                    try await DaemonProcess.run(arguments: daemonArguments, directory: directory.path, environment: environment) { daemon in
                        let client = HTTPTestClient(port: try await daemon.port())
                        // A 503 says "try again" (the database slow to answer on a loaded machine): so do we.
                        var registered = try await client.request(
                            "POST",
                            "/register",
                            json: ["user_id": "solo", "device_token": .string(EventStatusTests.good)]
                        )
                        for _ in 0..<5 where registered.status == 503 {
                            registered = try await client.request(
                                "POST",
                                "/register",
                                json: ["user_id": "solo", "device_token": .string(EventStatusTests.good)]
                            )
                        }
                        #expect(registered.status == 200, "\(registered.status) \(registered.text)")
                        var ids: [String] = []
                        func send(_ text: String) async throws {
                            let answer = try await client.request(
                                "POST",
                                "/events",
                                json: ["user": "solo", "text": .string(text)],
                                headers: EventStatusTests.backend
                            )
                            ids.append(try #require(answer.body?["id"]?.stringValue))
                        }
                        // The first is refused alone, so the second is written while the first waits.
                        try await send("one")
                        try await receiver.waitForLine(containing: "followed/\(ids[0])/delivered")
                        try await send("two")
                        let first = try #require(Self.refusals(receiver).first)
                        // Again within the backoff, under the same id, whatever was written meanwhile.
                        try await receiver.waitForLine(containing: "refused \(first.id)", after: 1, timeout: 15)
                        try await receiver.waitForLine(containing: "followed/\(ids[1])/delivered")

                        try FileManager.default.removeItem(atPath: directory.file("down"))
                        for id in ids { try await receiver.waitForLine(containing: "delivered followed/\(id)/delivered", timeout: 60) }

                        let refused = Self.refusals(receiver)
                        #expect(refused.filter { $0.id == first.id }.allSatisfy { $0.outcomes == first.outcomes }, "\(receiver.standardOutput)")
                        #expect(first.outcomes == ["followed/\(ids[0])/delivered"])
                        var idsOfOutcome: [String: Set<String>] = [:]
                        for refusal in refused { for outcome in refusal.outcomes { idsOfOutcome[outcome, default: []].insert(refusal.id) } }
                        for line in receiver.standardOutput where line.hasPrefix("took ") {
                            let parts = line.split(separator: " ")
                            idsOfOutcome[String(parts[3]), default: []].insert(String(parts[1]))
                        }
                        #expect(idsOfOutcome.values.allSatisfy { $0.count == 1 }, "each outcome under one webhook-id: \(idsOfOutcome)")
                        #expect(!daemon.standardError.contains { $0.contains("could not be read") }, "\(daemon.standardError)")
                    }
                }
            },
            cleanup: apns.stop
        )
    }

    /// The batches the receiver refused, in order: each one's `webhook-id` and outcome ids.
    static func refusals(_ receiver: DaemonProcess) -> [(id: String, outcomes: [String])] {
        receiver.standardOutput.filter { $0.hasPrefix("refused ") }.map { line in
            let parts = line.split(separator: " ")
            return (String(parts[1]), parts.count > 2 ? parts[2].split(separator: ",").map(String.init) : [])
        }
    }
}
