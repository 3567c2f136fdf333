import Foundation

/// The `data` of a Pong notification (pipelines/pong.yaml). FCM data values are strings, and
/// a null url is simply absent; the history route shows the same object with `url: null`.
public struct PongNotificationData: Codable, Equatable, Sendable {
    public var id: String
    /// ISO 8601 with microseconds, UTC, e.g. `2022-04-08T15:17:41.900560`.
    public var timestamp: String
    public var type: PongNotificationType
    public var url: String?

    public init(id: String, timestamp: String, type: PongNotificationType, url: String?) {
        self.id = id
        self.timestamp = timestamp
        self.type = type
        self.url = url
    }

    /// From the FCM `userInfo` dictionary (also carries `aps`, `gcm.message_id`, ...).
    public init?(userInfo: [AnyHashable: Any]) {
        guard let id = userInfo["id"] as? String, let timestamp = userInfo["timestamp"] as? String,
            let type = userInfo["type"] as? String
        else { return nil }
        self.init(id: id, timestamp: timestamp, type: PongNotificationType(rawValue: type), url: userInfo["url"] as? String)
    }

    public var route: PongRoute { PongRoute(url: url) }

    /// The timestamp as a date (microseconds kept to the millisecond); nil when malformed.
    public var date: Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        for format in ["yyyy-MM-dd'T'HH:mm:ss.SSSSSS", "yyyy-MM-dd'T'HH:mm:ss.SSS", "yyyy-MM-dd'T'HH:mm:ss"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: timestamp.replacingOccurrences(of: "Z", with: "")) { return date }
        }
        return nil
    }
}
