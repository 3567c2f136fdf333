import Crypto
import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// The pager Live Activities end to end: the shipped pager pipeline, the daemon, the APNs stand-in.
@Suite struct PagerFlowTests {
    static let deviceToken = String(repeating: "a1", count: 32)
    static let startToken = String(repeating: "b2", count: 80)
    static let updateToken = String(repeating: "c3", count: 80)

    @Test func tokensStayApartAndEachKindGetsItsOwnPushes() async throws {
        try await Self.withPagerDaemon { client, apns, daemon, _ in try await flow(client, apns: apns, daemon: daemon) }
    }

    /// The shipped pager pipeline on a daemon (with an admin listener) and the APNs stand-in.
    static func withPagerDaemon(_ body: @Sendable (HTTPTestClient, APNsStandIn, DaemonProcess, TemporaryDirectory) async throws -> Void) async throws
    {
        let directory = try TemporaryDirectory("pager")
        defer { directory.remove() }
        let (apns, apnsEnvironment) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "PAGERTEAM1", keyID: "PAGERKEY01")
        try directory.write(
            "pipelines/pager.yaml",
            try String(
                contentsOf: SvenFlowTests.repository.appendingPathComponent("pipelines/pager-live-activity.yaml"),
                encoding: .utf8
            )
        )
        let environment = apnsEnvironment.merging([
            "PAGER_JWT_SECRET": HTTPHostTests.secret, "PAGER_EVENTS_TOKEN": "pager-backend-secret", "PAGER_BUNDLE_ID": "com.example.pager",
        ]) { _, new in new }
        let arguments = ["run", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"]
        try await withCleanup(
            {
                try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { daemon in
                    try await body(HTTPTestClient(port: try await daemon.port()), apns, daemon, directory)
                }
            },
            cleanup: apns.stop
        )
    }

    func flow(_ client: HTTPTestClient, apns: APNsStandIn, daemon: DaemonProcess) async throws {
        let alice = try await HTTPHostTests.bearer("alice")
        let bob = try await HTTPHostTests.bearer("bob")
        let backend = ["authorization": "Bearer pager-backend-secret"]
        func page(_ to: String, _ message: String) async throws {
            #expect(
                try await client.request(
                    "POST",
                    "/api/pages",
                    json: ["to": .string(to), "sender": "ALICE", "message": .string(message)],
                    headers: backend
                ).status == 202
            )
        }

        // Empty or non-hex Live Activity tokens: 400, nothing stored.
        for bad: JSON in ["", "not-hex-at-all-not-hex-at-all-xx", .string(String(repeating: "a", count: 31))] {
            let response = try await client.request("POST", "/api/users/live-activity-token", json: ["live_activity_token": bad], headers: alice)
            #expect(response.status == 400)
            #expect(response.body?["field"] == "live_activity_token")
        }
        // Bob has only a device token (iOS < 17.2): an ordinary alert, and the log says why.
        #expect(
            try await client.request("POST", "/api/users/device-token", json: ["device_token": .string(Self.deviceToken)], headers: bob).status == 200
        )
        try await page("bob", "CALL ME")
        let fallback = try await apns.waitForRequests(1)[0]
        #expect(fallback.token == Self.deviceToken)
        #expect(fallback.headers["apns-push-type"] == "alert" && fallback.headers["apns-topic"] == "com.example.pager")
        #expect(fallback.body?["aps"]?["alert"] == ["title": "New page", "body": "ALICE: CALL ME", "sound": "default"])
        try await daemon.waitForLine(containing: "user bob has no push-to-start token")

        // Alice: device token and push-to-start token, registered separately; the page starts an activity.
        #expect(
            try await client.request("POST", "/api/users/device-token", json: ["device_token": .string(Self.deviceToken)], headers: alice).status
                == 200
        )
        #expect(
            try await client.request(
                "POST",
                "/api/users/live-activity-token",
                json: ["live_activity_token": .string(Self.startToken)],
                headers: alice
            ).status == 200
        )
        try await page("alice", "CALL ME")
        let start = try await apns.waitForRequests(2)[1]
        #expect(start.rejection == nil)
        #expect(start.token == Self.startToken, "the push-to-start token, never the device token")
        #expect(start.headers["apns-push-type"] == "liveactivity" && start.headers["apns-topic"] == "com.example.pager.push-type.liveactivity")
        #expect(start.body?["aps"]?["event"] == "start" && start.body?["aps"]?["attributes-type"] == "PagerActivityAttributes")

        // The running activity's update token: the next page updates instead of starting.
        #expect(
            try await client.request(
                "POST",
                "/api/users/live-activity-update-token",
                json: ["activity_id": "activity-1", "update_token": .string(Self.updateToken)],
                headers: alice
            ).status == 200
        )
        try await page("alice", "WHERE ARE YOU")
        let update = try await apns.waitForRequests(3)[2]
        #expect(update.token == Self.updateToken)
        #expect(update.body?["aps"]?["event"] == "update")
        #expect(update.body?["aps"]?["content-state"]?["message"] == "WHERE ARE YOU")

        // A 410 on a push-to-start token removes that token only: Carol's next page falls back
        // to her device token, which is still registered.
        let carol = try await HTTPHostTests.bearer("carol")
        let carolDevice = String(repeating: "d4", count: 32)
        let carolStart = String(repeating: "e5", count: 80)
        #expect(
            try await client.request("POST", "/api/users/device-token", json: ["device_token": .string(carolDevice)], headers: carol).status == 200
        )
        #expect(
            try await client.request("POST", "/api/users/live-activity-token", json: ["live_activity_token": .string(carolStart)], headers: carol)
                .status == 200
        )
        apns.script(.reject(status: 410, reason: "Unregistered", timestamp: Int64(Date().timeIntervalSince1970 * 1000) + 60_000))
        try await page("carol", "FIRST")
        #expect(try await apns.waitForRequests(4)[3].token == carolStart)
        try await eventually("carol's dead push-to-start token to be removed") {
            let metrics = try await AdminListenerTests.scrape(HTTPTestClient(port: try await daemon.adminPort()))
            return metrics.filter { $0.key.hasPrefix("pushpipe_tokens_pruned_total{") }.values.reduce(0, +) == 1
        }
        try await page("carol", "SECOND")
        let afterwards = try await apns.waitForRequests(5)[4]
        #expect(afterwards.token == carolDevice)
        #expect(afterwards.headers["apns-push-type"] == "alert")
    }
}
