import Foundation
import Logging
import PushPayloads
import PushPipeApps
import PushPipeCore
import PushPipeStages
import Testing

@testable import pushpipe

/// Every shipped pipeline's `_test.yaml` cases are rendered by pushpipe's own renderers and
/// decoded with the app-side library: renaming a key in a pipeline breaks this test, not the app.
@Suite struct PipelineContractTests {
    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    func rendered(_ name: String) async throws -> [PipelineTestRunner.CaseResult] {
        let runner = PipelineTestRunner(
            builtins: BuiltinStages.all + AppStages.all,
            pluginsDirectory: Self.repository.appendingPathComponent("plugins.d").path,
            logger: Logger(label: "contract")
        )
        let results = try await runner.run(testFile: Self.repository.appendingPathComponent("pipelines/\(name)_test.yaml").path).get()
        #expect(!results.isEmpty)
        return results
    }

    func userInfo(_ body: JSON) throws -> [AnyHashable: Any] {
        try #require(JSONSerialization.jsonObject(with: body.serialized()) as? [AnyHashable: Any])
    }

    @Test func ogsNotificationsDecodeAndRoute() async throws {
        var decoded = 0
        for result in try await rendered("ogs-turns") {
            for request in result.requests {
                let notification = try #require(OGSTurnNotification(userInfo: try userInfo(request.body)), "\(result.name)")
                #expect(notification.action == "open_game")
                #expect(notification.destination?.host == "online-go.com", "\(result.name): a tap must open OGS")
                #expect(notification.gameIDs?.first == notification.gameID)
                decoded += 1
            }
        }
        #expect(decoded >= 3)
    }

    @Test func svenNotificationsDecode() async throws {
        var decoded = 0
        for result in try await rendered("sven-replies") {
            for request in result.requests {
                #expect(SvenReplyNotification(userInfo: try userInfo(request.body))?.messageID.isEmpty == false, "\(result.name)")
                decoded += 1
            }
        }
        #expect(decoded >= 2)
    }

    @Test func pagerContentStateDecodesWithADefaultJSONDecoder() async throws {
        var liveActivities = 0
        var groupStarts = 0
        var broadcasts = 0
        for result in try await rendered("pager-live-activity") {
            for request in result.requests where request.header("apns-push-type") == "liveactivity" {
                let aps = try #require(request.body["aps"])
                let state = try JSONDecoder().decode(PagerActivityAttributes.ContentState.self, from: try #require(aps["content-state"]).serialized())
                #expect(!state.sender.isEmpty && !state.message.isEmpty)
                #expect(state.timestamp == aps["timestamp"]?.doubleValue)
                if aps["event"] == "start" {
                    let attributes = try JSONDecoder().decode(PagerActivityAttributes.self, from: try #require(aps["attributes"]).serialized())
                    #expect(aps["attributes-type"] == "PagerActivityAttributes")
                    // An activity on a group's channel knows its group; a personal one has none.
                    #expect((attributes.group != nil) == (aps["input-push-channel"] != nil), "\(result.name)")
                    if attributes.group != nil { groupStarts += 1 }
                }
                if request.url.contains("/4/broadcasts/") { broadcasts += 1 }
                liveActivities += 1
            }
        }
        #expect(liveActivities >= 2, "start and update are both decoded")
        #expect(groupStarts >= 1 && broadcasts >= 1, "a group's start and its broadcast update are decoded too")
    }

    @Test func pongDataDecodesFromTheFCMMessage() async throws {
        var decoded = 0
        for result in try await rendered("pong") {
            for request in result.requests {
                // What the app's userInfo holds: FCM puts `data` at the top level.
                let data = try userInfo(try #require(request.body["message"]?["data"]))
                let notification = try #require(PongNotificationData(userInfo: data), "\(result.name)")
                #expect(notification.id.count == 24, "24 hex characters, like the original ids")
                #expect(notification.date != nil, "\(notification.timestamp) parses")
                if let url = notification.url { #expect(notification.route != .unknown, "\(url) routes") }
                decoded += 1
            }
        }
        #expect(decoded >= 3)
    }
}
