import Foundation
import PushPipeCore
import PushPipePostgresTesting
import PushPipeTesting
import Testing

/// The shipped activity-digest pipeline on real daemons and both stores: comments on a post go
/// out as one notification carrying them all, once, from whichever daemon closes the digest.
@Suite(.serialized) struct ActivityDigestTests {
    static let backend = ["authorization": "Bearer dev-activity-token"]

    /// A zone where it is the middle of the day now: the pipeline's quiet hours do not apply.
    static var daytimeZone: String {
        let zones = ["UTC", "Asia/Tokyo", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "America/Los_Angeles", "Pacific/Auckland"]
        return zones.first { zone in
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: zone)!
            return (10...19).contains(calendar.component(.hour, from: Date()))
        } ?? "UTC"
    }

    @Test(arguments: IdempotentAcceptTests.StoreKind.allCases)
    func commentsOnAPostGoOutAsOneDigest(_ kind: IdempotentAcceptTests.StoreKind) async throws {
        guard let store = try await EventStatusTests.store(kind) else { return }
        let directory = try TemporaryDirectory("digest-\(kind)")
        defer { directory.remove() }
        try directory.write(
            "pipelines/activity-digest.yaml",
            try String(contentsOf: SvenFlowTests.repository.appendingPathComponent("pipelines/activity-digest.yaml"), encoding: .utf8)
        )
        let arguments = ["run", "--listen", "127.0.0.1:0", "--store", store, "--plugins", "none"]
        let environment = ["ACTIVITY_DIGEST_WINDOW": "6s", "ACTIVITY_TIME_ZONE": Self.daytimeZone]
        try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            let token = String(repeating: "d1", count: 16)
            #expect(try await client.request("POST", "/activity/register", json: ["user_id": "ana", "device_token": .string(token)]).status == 200)
            var locations: [String] = []
            for (actor, text) in [("bob", "Lovely"), ("cy", "Where is this?"), ("bob", "Again!")] {
                let accepted = try await client.request(
                    "POST",
                    "/activity/events",
                    json: ["user": "ana", "post": "/posts/42", "post_title": "My trip", "actor": .string(actor), "text": .string(text)],
                    headers: Self.backend
                )
                #expect(accepted.status == 202)
                locations.append(try #require(accepted.headers["location"]))
            }
            // The first to reach the digest (workers take the three at once) carries it once it
            // closes; the others' records follow its outcome.
            let carrier = try await eventually("a comment's digest is delivered", timeout: .seconds(60)) { () async throws -> String? in
                // Its followers' records are written with its own: the carrier is the one not in a digest.
                for location in locations {
                    if let status = try await TimingTests.status(client, location, when: "delivered", headers: Self.backend), status["code"] == nil {
                        return location
                    }
                }
                return nil
            }
            let carrierID = try #require(carrier.split(separator: "/").last)
            for location in locations where location != carrier {
                let status = try await client.request("GET", location, headers: Self.backend).body
                #expect(status?["state"] == "delivered" && status?["code"] == "digest", "\(String(describing: status))")
                #expect(status?["reason"]?.stringValue?.contains("event \(carrierID)") == true, "the same caller: named")
            }
            let admin = HTTPTestClient(port: try await daemon.adminPort())
            let samples = prometheusSamples(try await admin.request("GET", "/metrics").text)
            let series = "{pipeline=\"activity-digest\",stage=\"filters[2]\"}"
            #expect(samples["pushpipe_digests_opened_total" + series] == 1, "\(samples.filter { $0.key.contains("digest") })")
            #expect(samples["pushpipe_digests_closed_total" + series] == 1)
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
            let output = daemon.standardOutput.joined(separator: "\n")
            #expect(output.components(separatedBy: "new comments on My trip").count == 2, "one notification: \(output)")
            #expect(output.contains("3 new comments on My trip"))
            // Each actor once, in the order the comments reached the digest: workers take the
            // three at once, so either may be first on a busy machine.
            #expect(output.contains("bob, cy and others replied") || output.contains("cy, bob and others replied"), "\(output)")
        }
    }
}
