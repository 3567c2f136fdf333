import Foundation

#if canImport(ActivityKit)
import ActivityKit
#endif

/// A pager group's broadcast channel (iOS 18), as pushpipe's `/api/groups/channels` routes
/// answer it to the pager backend, which hands it to the members' apps. An activity started
/// with `pushType` listens on the channel: one page to the group updates it on every phone.
public struct PagerGroupChannel: Codable, Hashable, Sendable {
    public var group: String
    /// APNs' id of the channel (base64; its length is not fixed).
    public var channelID: String

    enum CodingKeys: String, CodingKey {
        case group
        case channelID = "channel_id"
    }

    public init(group: String, channelID: String) {
        self.group = group
        self.channelID = channelID
    }

    /// The route's answer; nil when a field is missing or mistyped, or the id is empty.
    public init?(json data: Data) {
        guard let decoded = UserInfo.decode(Self.self, fromJSON: data), !decoded.channelID.isEmpty else { return nil }
        self = decoded
    }

    /// The attributes of a member's activity on this channel.
    public func attributes(recipient: String) -> PagerActivityAttributes {
        PagerActivityAttributes(recipient: recipient, group: group)
    }
}

#if canImport(ActivityKit) && os(iOS)
@available(iOS 18.0, *)
extension PagerGroupChannel {
    /// For `Activity.request(attributes:content:pushType:)`: the activity gets the group's broadcasts.
    public var pushType: PushType { .channel(channelID) }
}
#endif
