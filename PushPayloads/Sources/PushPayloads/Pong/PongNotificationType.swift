/// `data.type`: which graphic the app shows. The list grows; unknown types are kept.
public enum PongNotificationType: Equatable, Hashable, Sendable, Codable {
    case upvote, comment, hot, top, leader, message, reply, violation, generic
    case other(String)

    public init(rawValue: String) {
        switch rawValue {
        case "upvote": self = .upvote
        case "comment": self = .comment
        case "hot": self = .hot
        case "top": self = .top
        case "leader": self = .leader
        case "message": self = .message
        case "reply": self = .reply
        case "violation": self = .violation
        case "generic": self = .generic
        default: self = .other(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .upvote: "upvote"
        case .comment: "comment"
        case .hot: "hot"
        case .top: "top"
        case .leader: "leader"
        case .message: "message"
        case .reply: "reply"
        case .violation: "violation"
        case .generic: "generic"
        case .other(let value): value
        }
    }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
