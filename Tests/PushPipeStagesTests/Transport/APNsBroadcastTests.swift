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
        Event(
            pipeline: harness.definition.name,
            user: "on-call-team",
            time: Date(timeIntervalSince1970: 1_731_000_000),
            body: ["sender": "ALICE", "message": "DB down"]
        )
    }

    @Test func anUpdateGoesOnceToTheChannel() async throws {
        let harness = try await APNsHarness.make(renderer: Self.renderer(event: "update"))
        try await withCleanup(
            {
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
            },
            cleanup: harness.close
        )
    }

    @Test func aDeletedChannelIsPrunedLikeADeadToken() async throws {
        let harness = try await APNsHarness.make(renderer: Self.renderer(event: "update"))
        try await withCleanup(
            {
                let channel = harness.standIn.createChannel()
                try await harness.register("on-call-team", channel, kind: "broadcast-channel")
                harness.standIn.deleteChannel(channel)
                let report = try await harness.run { await $0.process(event(harness)) }
                #expect(report.deliveries.first?.outcome == .dropToken)
                #expect(report.deliveries.first?.reason?.contains("ChannelNotRegistered") == true)
                let left = try await harness.store.pipeline(harness.definition.name).tokens(user: "on-call-team", kind: "broadcast-channel")
                #expect(left.isEmpty)
            },
            cleanup: harness.close
        )
    }

    @Test func aBroadcastCannotStartAnActivity() async throws {
        let harness = try await APNsHarness.make(
            renderer: Self.renderer(event: "start").replacingOccurrences(of: "update_token_kind", with: "start_token_kind")
        )
        try await withCleanup(
            {
                try await harness.register("on-call-team", harness.standIn.createChannel(), kind: "broadcast-channel")
                let report = try await harness.run { await $0.process(event(harness)) }
                #expect(report.status != .delivered)
                #expect(harness.standIn.requests.isEmpty)
            },
            cleanup: harness.close
        )
    }

    /// The Pager pipeline's renderer: `event: auto` and the default `broadcast_token_kind`.
    static let pagerRenderer = """
          type: apns.live-activity
          attributes_type: PagerActivityAttributes
          content_state: {sender: "{{sender}}", message: "{{message}}", timestamp: {$from: event.time}, isDemo: false, messageIndex: 0, totalMessages: 1}
          alert: {title: "{{sender}}", body: "{{message}}"}
          input_push_channel_of: "{{#group}}group:{{group}}{{/group}}"
        """

    /// A group is a recipient like a user: its page is one update on its channel. An event
    /// without a recipient (one for every user) must not reach every group's channel.
    @Test func onlyThePagedGroupsChannelGetsTheUpdate() async throws {
        let harness = try await APNsHarness.make(renderer: Self.pagerRenderer)
        try await withCleanup(
            {
                let ops = harness.standIn.createChannel()
                try await harness.register("group:ops", ops, kind: "broadcast-channel")
                try await harness.register("group:sales", harness.standIn.createChannel(), kind: "broadcast-channel")
                let everyone = try await harness.run {
                    await $0.process(Event(pipeline: harness.definition.name, user: nil, body: ["sender": "A", "message": "B"]))
                }
                #expect(everyone.status == .noRecipients)
                #expect(harness.standIn.requests.isEmpty)

                let page = Event(
                    pipeline: harness.definition.name,
                    user: "group:ops",
                    body: ["group": "ops", "sender": "ALICE", "message": "ALL HANDS"]
                )
                let report = try await harness.run { await $0.process(page) }
                #expect(report.status == .delivered)
                #expect(harness.standIn.requests.map { $0.headers["apns-channel-id"] } == [ops])
                #expect(harness.standIn.requests.first?.body?["aps"]?["event"] == "update")
            },
            cleanup: harness.close
        )
    }

    /// A member's start that names a group carries the group's channel, even when the member
    /// has a running personal activity: the group's activity is another one.
    @Test func aStartNamingAGroupJoinsItsChannel() async throws {
        let harness = try await APNsHarness.make(renderer: Self.pagerRenderer)
        try await withCleanup(
            {
                let ops = harness.standIn.createChannel()
                try await harness.register("group:ops", ops, kind: "broadcast-channel")
                try await harness.register("alice", APNsHarness.longToken, kind: "push-to-start")
                try await harness.register("alice", String(repeating: "c3", count: 80), kind: "activity-update")
                let join = Event(pipeline: harness.definition.name, user: "alice", body: ["group": "ops", "sender": "ALICE", "message": "JOINED"])
                #expect(try await harness.run { await $0.process(join) }.status == .delivered)
                let start = try #require(harness.standIn.requests.first)
                #expect(start.token == APNsHarness.longToken)
                #expect(start.body?["aps"]?["event"] == "start")
                #expect(start.body?["aps"]?["input-push-channel"] == .string(ops))

                // A group without a channel: an ordinary page (an update of the running activity).
                let unknown = Event(pipeline: harness.definition.name, user: "alice", body: ["group": "nobody", "sender": "ALICE", "message": "HI"])
                #expect(try await harness.run { await $0.process(unknown) }.status == .delivered)
                let update = try #require(harness.standIn.requests.last)
                #expect(update.token == String(repeating: "c3", count: 80))
                #expect(update.body?["aps"]?["input-push-channel"] == nil)
            },
            cleanup: harness.close
        )
    }
}
