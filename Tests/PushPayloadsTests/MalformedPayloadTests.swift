import Foundation
import PushPayloads
import Testing

/// Missing or mistyped fields give nil, never a crash.
@Suite struct MalformedPayloadTests {
    /// userInfo dictionaries written as JSON (test arguments must be Sendable).
    static func userInfo(_ json: String) -> [AnyHashable: Any] {
        (try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [AnyHashable: Any]) ?? [:]
    }

    @Test(arguments: [
        "{}",
        #"{"web_url": "https://online-go.com/game/1"}"#,
        #"{"action": "open_game"}"#,
        #"{"web_url": 5, "action": "open_game"}"#,
        #"{"web_url": "https://online-go.com/game/1", "action": "open_game", "game_id": "not a number"}"#,
        #"{"web_url": "https://online-go.com/game/1", "action": "open_game", "game_ids": "1,2"}"#,
    ])
    func ogsNotificationsWithoutRequiredFieldsAreIgnored(_ json: String) {
        #expect(OGSTurnNotification(userInfo: Self.userInfo(json)) == nil)
    }

    @Test func ogsNotificationDecodesFromUserInfo() {
        let userInfo: [AnyHashable: Any] = [
            "aps": ["alert": ["title": "t", "body": "b"], "badge": 1], "web_url": "https://online-go.com/game/12345678",
            "app_url": "ogs://game/12345678", "game_id": 12_345_678, "action": "open_game", "game_name": "Game Name",
        ]
        let decoded = OGSTurnNotification(userInfo: userInfo)
        #expect(decoded?.gameID == 12_345_678)
        #expect(decoded?.destination?.absoluteString == "https://online-go.com/game/12345678")
    }

    @Test(arguments: [
        "{}", #"{"id": "x", "timestamp": "t"}"#, #"{"id": 5, "timestamp": "t", "type": "like"}"#, #"{"timestamp": "t", "type": "like"}"#,
    ])
    func pongDataWithoutRequiredFieldsIsIgnored(_ json: String) {
        #expect(PongNotificationData(userInfo: Self.userInfo(json)) == nil)
    }

    @Test func pongTypesKeepUnknownValues() {
        #expect(PongNotificationType(rawValue: "upvote") == .upvote)
        #expect(PongNotificationType(rawValue: "like") == .other("like"))
        #expect(PongNotificationType(rawValue: "like").rawValue == "like")
    }

    @Test(arguments: [
        ("https://pong.college/posts/DKJWDO3820NKKDHW2920EN", PongRoute.post(id: "DKJWDO3820NKKDHW2920EN")),
        ("https://pong.college/messages/T42", .messages(threadID: "T42")),
        ("https://pong.college/stats", .stats),
        ("https://pong.college/", .home),
        ("https://evil.com/posts/1", .unknown),
        ("https://pong.college/posts/../../x", .unknown),
        ("https://pong.college/posts/", .unknown),
    ])
    func pongRoutes(_ url: String, _ route: PongRoute) {
        #expect(PongRoute(url: url) == route)
    }

    @Test func pongWithoutURLGoesHome() {
        let data = PongNotificationData(userInfo: ["id": "6250523a74227b9f561e5bb8", "timestamp": "2022-07-11T15:36:00.442669", "type": "generic"])
        #expect(data?.route == .home)
        #expect(data?.date != nil)
    }

    @Test func svenNeedsAMessageID() {
        #expect(SvenReplyNotification(userInfo: ["message_id": "m-1"])?.messageID == "m-1")
        #expect(SvenReplyNotification(userInfo: ["message_id": ""]) == nil)
        #expect(SvenReplyNotification(userInfo: ["message_id": 7]) == nil)
        #expect(SvenReplyNotification(userInfo: [:]) == nil)
    }

    @Test func pagerContentStateRejectsWrongTypes() {
        let wrong = Data(#"{"sender": "A", "message": "B", "timestamp": "yesterday", "isDemo": false, "messageIndex": 0, "totalMessages": 1}"#.utf8)
        #expect(UserInfo.decode(PagerActivityAttributes.ContentState.self, fromJSON: wrong) == nil)
    }
}
