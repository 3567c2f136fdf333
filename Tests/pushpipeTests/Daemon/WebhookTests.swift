import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// Outcome webhooks on real daemons and both stores, checked by an independent receiver: the
/// Standard Webhooks reference library (PyPI `standardwebhooks`) verifies every signature.
/// Outcomes are durable: a daemon killed while its receiver is down loses none of them.
@Suite(.serialized) struct WebhookTests {
    static let secret = "whsec_" + Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()

    /// Takes what verifies (200) unless a file `down` exists (503); prints each batch it took or refused.
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
                    print("refused %s" % headers.get("webhook-id"), flush=True)
                    self.send_response(503); self.send_header("content-length", "0"); self.end_headers()
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
        try await withCleanup({
            try await DaemonProcess.run(arguments: [], directory: directory.path, environment: environment,
                                        launcher: ["/usr/bin/env", "python3", "receiver.py"]) { receiver in
                let line = try await receiver.waitForLine(containing: "listening on")
                let port = try #require(Int(line.split(separator: " ").last ?? ""))
                try directory.write("pipelines/followed.yaml", Self.pipeline(receiverPort: port))
                let daemonArguments = ["run", "--listen", "127.0.0.1:0", "--store", store, "--plugins", "none"]
                let ids = try await DaemonProcess.run(arguments: daemonArguments, directory: directory.path, environment: environment) { daemon in
                    var ids: [String] = []
                    let client = HTTPTestClient(port: try await daemon.port())
                    for (user, token) in [("solo", EventStatusTests.good), ("leaver", gone)] {
                        #expect(try await client.request("POST", "/register", json: ["user_id": .string(user), "device_token": .string(token)]).status == 200)
                    }
                    let first = try await client.request("POST", "/events", json: ["user": "solo", "text": "one"], headers: EventStatusTests.backend)
                    ids.append(try #require(first.body?["id"]?.stringValue))
                    try await receiver.waitForLine(containing: "followed/\(ids[0])/delivered")

                    // The receiver goes down; outcomes wait in the store while the daemon tries.
                    try directory.write("down", "")
                    for (user, text) in [("leaver", "two"), ("solo", "three")] {
                        let answer = try await client.request("POST", "/events", json: ["user": .string(user), "text": .string(text)],
                                                              headers: EventStatusTests.backend)
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
                    try await receiver.waitForLine(containing: "followed/\(ids[2])/delivered", timeout: 60)
                    try await receiver.waitForLine(containing: "followed/\(ids[1])/failed", timeout: 60)
                    try await receiver.waitForLine(containing: "followed/\(ids[1])/dead_token", timeout: 60)
                }
                let taken = Self.taken(receiver)
                #expect(taken["delivered"] == ["followed/\(ids[0])/delivered", "followed/\(ids[2])/delivered"])
                #expect(taken["failed"] == ["followed/\(ids[1])/failed"])
                #expect(taken["dead_token"]?.count == 1)
                #expect(!receiver.standardOutput.contains { $0.hasPrefix("bad signature") }, "\(receiver.standardOutput)")
            }
        }, cleanup: apns.stop)
    }
}
