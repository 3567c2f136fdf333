/// A Sven reply notification (pipelines/sven-replies.yaml): tapping it plays `message_id`.
public struct SvenReplyNotification: Codable, Equatable, Sendable {
    public var messageID: String

    enum CodingKeys: String, CodingKey { case messageID = "message_id" }

    public init(messageID: String) { self.messageID = messageID }

    /// nil when `message_id` is missing or not a non-empty string.
    public init?(userInfo: [AnyHashable: Any]) {
        guard let id = userInfo["message_id"] as? String, !id.isEmpty else { return nil }
        messageID = id
    }
}
