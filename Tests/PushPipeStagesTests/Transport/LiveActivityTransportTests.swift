import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// Live Activity update and end pushes through the real transport to the stand-in.
@Suite struct LiveActivityTransportTests {
    static let renderer = """
          type: apns.live-activity
          event: end
          attributes_type: PagerActivityAttributes
          content_state: {sender: "{{sender}}", message: "{{message}}", timestamp: {$from: event.time}, isDemo: false, messageIndex: 0, totalMessages: 1}
          priority: 5
        """

    @Test func endGoesToTheActivityUpdateTokenAndDismisses() async throws {
        let harness = try await APNsHarness.make(renderer: Self.renderer)
        try await withCleanup(
            {
                try await harness.register("alice", APNsHarness.token, kind: "device")
                try await harness.register("alice", APNsHarness.longToken, kind: "activity-update")
                let event = Event(
                    pipeline: harness.definition.name,
                    user: "alice",
                    time: Date(timeIntervalSince1970: 1_731_000_000),
                    body: ["sender": "ALICE", "message": "BYE"]
                )
                let report = try await harness.run { await $0.process(event) }
                #expect(report.status == .delivered)
                let request = try #require(harness.standIn.requests.first)
                #expect(request.rejection == nil)
                #expect(request.token == APNsHarness.longToken, "the activity's update token, not the device token")
                #expect(request.headers["apns-push-type"] == "liveactivity")
                #expect(request.headers["apns-topic"] == APNsHarness.bundleID + ".push-type.liveactivity")
                #expect(request.headers["apns-priority"] == "5")
                #expect(
                    request.body == [
                        "aps": [
                            "event": "end", "timestamp": 1_731_000_000, "dismissal-date": 1_731_000_000,
                            "content-state": [
                                "sender": "ALICE", "message": "BYE", "timestamp": 1_731_000_000, "isDemo": false,
                                "messageIndex": 0, "totalMessages": 1,
                            ],
                        ]
                    ]
                )
            },
            cleanup: harness.close
        )
    }

    @Test func endWithoutARunningActivitySendsNothing() async throws {
        let harness = try await APNsHarness.make(renderer: Self.renderer)
        try await withCleanup(
            {
                try await harness.register("alice", APNsHarness.token, kind: "device")
                let report = try await harness.run {
                    await $0.process(Event(pipeline: harness.definition.name, user: "alice", body: ["sender": "A", "message": "B"]))
                }
                #expect(report.status == .noRecipients)
                #expect(harness.standIn.requests.isEmpty, "an end never falls back to an alert")
            },
            cleanup: harness.close
        )
    }
}
