import Foundation

/// pushpipe's OGS "your turn" notification (pipelines/ogs-turns.yaml), as the app receives it.
public struct OGSTurnNotification: Codable, Equatable, Sendable {
    public var webURL: String
    public var appURL: String?
    public var gameID: Int?
    public var gameName: String?
    public var action: String
    /// Every game the notification covers, newest move first (several games in one notification).
    public var gameIDs: [Int]?

    enum CodingKeys: String, CodingKey {
        case webURL = "web_url"
        case appURL = "app_url"
        case gameID = "game_id"
        case gameName = "game_name"
        case action
        case gameIDs = "game_ids"
    }

    public init(webURL: String, appURL: String? = nil, gameID: Int? = nil, gameName: String? = nil, action: String, gameIDs: [Int]? = nil) {
        self.webURL = webURL
        self.appURL = appURL
        self.gameID = gameID
        self.gameName = gameName
        self.action = action
        self.gameIDs = gameIDs
    }

    /// From the notification's `userInfo`; nil when `web_url` or `action` is missing: the
    /// notification is then ignored rather than crashing the app.
    public init?(userInfo: [AnyHashable: Any]) {
        guard let decoded = UserInfo.decode(Self.self, from: userInfo) else { return nil }
        self = decoded
    }

    /// Where a tap goes: `app_url` when it routes, else `web_url`, else nowhere.
    public var destination: URL? {
        if let appURL, let url = OGSDeepLink.route(appURL) { return url }
        return OGSDeepLink.route(webURL)
    }
}
