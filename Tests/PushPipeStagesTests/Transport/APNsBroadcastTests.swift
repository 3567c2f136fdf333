import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// iOS 18 broadcast channels through the real transport to the stand-in: a token of the
/// `broadcast-channel` kind is a channel id, and one request updates every subscribed activity.
@Suite struct APNsBroadcastTests {
    static func renderer(event: String) -> String {
        """
          type: apns.live-activity
          event: \(event)
          update_token_kind: broadcast-channel
          fallback_token_kind: ""
          attributes_type: PagerActivityAttributes
          content_state: {sender: "{{sender}}", message: "{{message}}", timestamp: {$from: event.time}, isDemo: false, messageIndex: 0, totalMessages: 1}
          alert: {title: "{{sender}}", body: "{{message}}"}
        """
    }

    func event(_ harness: APNsHarness) -> Event {
        Event(pipeline: harness.definition.name, user: "on-call-team", time: Date(timeIntervalSince1970: 1_731_000_000),
              body: ["sender": "ALICE", "message": "DB down"])
    }

    @Test func anUpdateGoesOnceToTheChannel() async throws {
        let harness = try await APNsHarness.make(renderer: Self.renderer(event: "update"))
        try await withCleanup({
            let channel = harness.standIn.createChannel()
            try await harness.register("on-call-team", channel, kind: "broadcast-channel")
            let report = try await harness.run { await $0.process(event(harness)) }
            #expect(report.status == .delivered)
            let request = try #require(harness.standIn.requests.first)
            #expect(request.rejection == nil)
            #expect(request.path == "/4/broadcasts/apps/\(APNsHarness.bundleID)")
            #expect(request.headers["apns-channel-id"] == channel)
            #expect(request.headers["apns-push-type"] == "liveactivity")
            #expect(request.headers["apns-expiration"] == "0")
            #expect(request.headers["apns-topic"] == nil)
            #expect(request.body?["aps"]?["event"] == "update")
            #expect(report.deliveries.first?.providerID?.isEmpty == false, "the message's apns-unique-id")
            #expect(harness.standIn.requests.count == 1)
        }, cleanup: harness.close)
    }

    @Test func aDeletedChannelIsPrunedLikeADeadToken() async throws {
        let harness = try await APNsHarness.make(renderer: Self.renderer(event: "update"))
        try await withCleanup({
            let channel = harness.standIn.createChannel()
            try await harness.register("on-call-team", channel, kind: "broadcast-channel")
            harness.standIn.deleteChannel(channel)
            let report = try await harness.run { await $0.process(event(harness)) }
            #expect(report.deliveries.first?.outcome == "drop-token")
            #expect(report.deliveries.first?.reason?.contains("ChannelNotRegistered") == true)
            let left = try await harness.store.tokens(pipeline: harness.definition.name, user: "on-call-team", kind: "broadcast-channel")
            #expect(left.isEmpty)
        }, cleanup: harness.close)
    }

    @Test func aBroadcastCannotStartAnActivity() async throws {
        let harness = try await APNsHarness.make(renderer: Self.renderer(event: "start").replacingOccurrences(of: "update_token_kind", with: "start_token_kind"))
        try await withCleanup({
            try await harness.register("on-call-team", harness.standIn.createChannel(), kind: "broadcast-channel")
            let report = try await harness.run { await $0.process(event(harness)) }
            #expect(report.status != .delivered)
            #expect(harness.standIn.requests.isEmpty)
        }, cleanup: harness.close)
    }
}
