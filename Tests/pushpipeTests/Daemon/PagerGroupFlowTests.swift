import Foundation
import PushPayloads
import PushPipeCore
import PushPipeTesting
import Testing

/// The Pager pipeline's group variant end to end (iOS 18 broadcast channels): the backend makes
/// a group's channel through the daemon, a member's activity joins it, and a page to the group
/// is one broadcast, seen by the tap and counted by the metrics like any delivery.
@Suite struct PagerGroupFlowTests {
    static let startToken = String(repeating: "b2", count: 80)

    @Test func aGroupsChannelIsMadeJoinedAndPagedWithOneBroadcast() async throws {
        try await PagerFlowTests.withPagerDaemon { client, apns, daemon, directory in
            try await flow(client, admin: try await daemon.adminPort(), apns: apns, daemon: daemon, directory: directory)
        }
    }

    func flow(_ client: HTTPTestClient, admin adminPort: Int, apns: APNsStandIn, daemon: DaemonProcess, directory: TemporaryDirectory) async throws {
        let backend = ["authorization": "Bearer pager-backend-secret"]
        @Sendable func sends() -> [APNsStandIn.Request] { apns.requests.filter { !$0.path.hasPrefix("/1/apps/") } }

        // The channel routes are the backend's: no secret, no channel; a group must be named.
        #expect(try await client.request("POST", "/api/groups/channels", json: ["group": "ops"]).status == 401)
        let unnamed = try await client.request("POST", "/api/groups/channels", json: ["group": ""], headers: backend)
        #expect(unnamed.status == 400 && unnamed.body?["field"] == "group")
        #expect(apns.channels.isEmpty)

        // Made once on APNs; asking again answers the same channel.
        let created = try await client.request("POST", "/api/groups/channels", json: ["group": "ops"], headers: backend)
        #expect(created.status == 201)
        let channel = try #require(PagerGroupChannel(json: Data(created.text.utf8)), "the app's type decodes the answer: \(created.text)")
        #expect(channel.group == "ops" && apns.channels == [channel.channelID])
        let again = try await client.request("POST", "/api/groups/channels", json: ["group": "ops"], headers: backend)
        #expect(again.status == 200 && again.body?["channel_id"] == .string(channel.channelID))
        #expect(apns.channels.count == 1)
        let read = try await client.request("GET", "/api/groups/channels/ops", headers: backend)
        #expect(PagerGroupChannel(json: Data(read.text.utf8)) == channel)
        let unknown = try await client.request("GET", "/api/groups/channels/nobody", headers: backend)
        #expect(unknown.status == 404 && unknown.body?["field"] == "group")

        // A page to Alice naming the group starts her activity on the group's channel.
        let alice = try await HTTPHostTests.bearer("alice")
        #expect(
            try await client.request(
                "POST",
                "/api/users/live-activity-token",
                json: ["live_activity_token": .string(Self.startToken)],
                headers: alice
            ).status == 200
        )
        let before = apns.requests.count
        #expect(
            try await client.request(
                "POST",
                "/api/pages",
                json: ["to": "alice", "group": "ops", "sender": "ALICE", "message": "JOIN"],
                headers: backend
            ).status == 202
        )
        let start = try await apns.waitForRequests(before + 1)[before]
        #expect(start.rejection == nil && start.token == Self.startToken)
        #expect(start.body?["aps"]?["event"] == "start")
        #expect(start.body?["aps"]?["input-push-channel"] == .string(channel.channelID))
        let attributes = try JSONDecoder().decode(PagerActivityAttributes.self, from: try #require(start.body?["aps"]?["attributes"]).serialized())
        #expect(attributes == channel.attributes(recipient: "alice"))

        // A page to the group: one broadcast, followed by a tap on the admin listener.
        let tapArguments = ["tap", "--admin", "http://127.0.0.1:\(adminPort)", "--pipeline", "pager-live-activity"]
        try await DaemonProcess.run(arguments: tapArguments, directory: directory.path) { tap in
            try await tap.waitForLine(containing: "pushpipe tap: connected")
            #expect(
                try await client.request(
                    "POST",
                    "/api/groups/pages",
                    json: ["group": "ops", "sender": "ALICE", "message": "ALL HANDS"],
                    headers: backend
                ).status == 202
            )
            try await tap.waitForLine(containing: #""what":"outcome""#)
            let broadcast = try #require(sends().last)
            #expect(broadcast.rejection == nil)
            #expect(broadcast.path == "/4/broadcasts/apps/com.example.pager")
            #expect(broadcast.headers["apns-channel-id"] == channel.channelID && broadcast.headers["apns-push-type"] == "liveactivity")
            #expect(broadcast.body?["aps"]?["event"] == "update" && broadcast.body?["aps"]?["content-state"]?["message"] == "ALL HANDS")

            let records = try tap.standardOutput.filter { $0.hasPrefix("{") }.map { try JSON.parse($0) }
            let request = try #require(records.first { $0["what"] == "request" })
            #expect(request["user"] == "group:ops")
            #expect(request["request"]?["url"]?.stringValue?.hasSuffix("/4/broadcasts/apps/com.example.pager") == true)
            #expect(request["request"]?["headers"]?["apns-channel-id"] == .string(TokenMask.mask(channel.channelID)))
            #expect(records.first { $0["what"] == "outcome" }?["outcome"] == "delivered")
            #expect(!tap.standardOutput.joined().contains(channel.channelID), "the channel id is masked like a token")
        }
        var metrics = try await AdminListenerTests.scrape(HTTPTestClient(port: adminPort))
        let labels = #"pipeline="pager-live-activity",transport="apns""#
        #expect(metrics[#"pushpipe_deliveries_total{\#(labels),outcome="delivered",reason=""}"#] == 2, "the start and the broadcast")

        // A channel deleted on APNs is pruned like a dead token, and the group has none left.
        apns.deleteChannel(channel.channelID)
        #expect(
            try await client.request(
                "POST",
                "/api/groups/pages",
                json: ["group": "ops", "sender": "ALICE", "message": "GONE?"],
                headers: backend
            ).status == 202
        )
        try await eventually("the deleted channel to be pruned") {
            try await AdminListenerTests.scrape(HTTPTestClient(port: adminPort))[#"pushpipe_tokens_pruned_total{pipeline="pager-live-activity"}"#]
                == 1
        }
        #expect(try await client.request("GET", "/api/groups/channels/ops", headers: backend).status == 404)
        metrics = try await AdminListenerTests.scrape(HTTPTestClient(port: adminPort))
        #expect(metrics[#"pushpipe_deliveries_total{\#(labels),outcome="dead_token",reason="ChannelNotRegistered"}"#] == 1)
        #expect(metrics[#"pushpipe_tokens_pruned_total{pipeline="pager-live-activity"}"#] == 1)

        // Deleting a group deletes its channel on APNs too.
        let sales = try await client.request("POST", "/api/groups/channels", json: ["group": "sales"], headers: backend)
        let salesChannel = try #require(sales.body?["channel_id"]?.stringValue)
        #expect(apns.channels.contains(salesChannel))
        let deleted = try await client.request("DELETE", "/api/groups/channels/sales", headers: backend)
        #expect(deleted.status == 200 && deleted.body?["channels"] == 1)
        #expect(!apns.channels.contains(salesChannel))
        #expect(try await client.request("GET", "/api/groups/channels/sales", headers: backend).status == 404)
    }
}
