import Crypto
import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// The Sven reply notifications end to end: the shipped pipeline file, the real daemon, real
/// inotify, the APNs stand-in verifying the provider token; a restart sends nothing twice.
@Suite struct SvenFlowTests {
    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    @Test func replyFileBecomesOneNotificationAndIsNeverResent() async throws {
        let directory = try TemporaryDirectory("sven")
        defer { directory.remove() }
        let (standIn, apnsEnvironment) = try await APNsStandIn.startWithThrowawayCredentials(
            in: directory,
            teamID: "SVENTEAM01",
            keyID: "SVENKEY001",
            keyFile: "keys/AuthKey.p8"
        )
        let pipeline = try String(contentsOf: Self.repository.appendingPathComponent("pipelines/sven-replies.yaml"), encoding: .utf8)
        try directory.write("pipelines/sven-replies.yaml", pipeline)
        try FileManager.default.createDirectory(atPath: directory.file("replies"), withIntermediateDirectories: true)
        let environment = apnsEnvironment.merging([
            "APNS_KEY_PATH": "keys/AuthKey.p8",  // relative: it starts at the daemon's working directory
            "SVEN_REPLY_DIR": directory.file("replies"), "SVEN_BUNDLE_ID": "com.example.sven",
        ]) { _, new in new }
        try await withCleanup({ try await runFlow(directory: directory, standIn: standIn, environment: environment) }, cleanup: standIn.stop)
    }

    func runFlow(directory: TemporaryDirectory, standIn: APNsStandIn, environment: [String: String]) async throws {
        let arguments = ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"]
        let oldToken = String(repeating: "11", count: 32)
        let newToken = String(repeating: "22", count: 80)
        let text = String(repeating: "Sven says hello. ", count: 8)

        try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            // The install id is a string: a number is refused, not coerced.
            let numeric = try await client.request("POST", "/register-apns", json: ["device_token": 12345, "apns_token": .string(oldToken)])
            #expect(numeric.status == 422)
            #expect(numeric.body?["field"] == "device_token")
            for token in [oldToken, newToken] {
                let response = try await client.request(
                    "POST",
                    "/register-apns",
                    json: ["device_token": "install-1", "apns_token": .string(token.uppercased())]
                )
                #expect(response.status == 200)
            }
            // The reply step writes elsewhere and renames into the folder: never half-written.
            let staged = try directory.write("staging/r1.json", JSON.object(["message_id": "m-1", "text": .string(text)]).compactText)
            try FileManager.default.moveItem(atPath: staged, toPath: directory.file("replies/r1.json"))
            let request = try #require(try await standIn.waitForRequests(1).first)
            #expect(request.rejection == nil)
            #expect(request.token == newToken, "the newest token replaced the earlier one")
            #expect(request.headers["apns-topic"] == "com.example.sven")
            #expect(request.headers["apns-priority"] == "10")
            #expect(
                request.body == [
                    "aps": ["alert": ["title": "Sven", "body": .string(String(text.prefix(100)) + "...")], "sound": "default", "badge": 1],
                    "message_id": "m-1",
                ]
            )
            try await eventually("r1.json to be moved to sent/") { FileManager.default.fileExists(atPath: directory.file("replies/sent/r1.json")) }
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
        }

        // While the daemon is down a second reply arrives; it is sent at start, the first is not.
        try directory.write("replies/r2.json", #"{"message_id": "m-2", "text": "short"}"#)
        try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { daemon in
            try await eventually("r2.json to be moved to sent/") { FileManager.default.fileExists(atPath: directory.file("replies/sent/r2.json")) }
            let requests = standIn.requests
            #expect(requests.count == 2)
            #expect(requests.last?.body?["message_id"] == "m-2")
            #expect(requests.filter { $0.body?["message_id"] == "m-1" }.count == 1)
        }
    }
}
