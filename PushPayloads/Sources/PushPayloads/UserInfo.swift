import Foundation

/// Notification payloads arrive as `[AnyHashable: Any]` (APNs `userInfo`, FCM data) in the
/// app and as JSON in tests; both go through JSON so one `Decodable` type serves both.
public enum UserInfo {
    /// Decodes `T` from a userInfo dictionary; nil when a field is missing or mistyped (never a crash).
    public static func decode<T: Decodable>(_ type: T.Type, from userInfo: [AnyHashable: Any]) -> T? {
        var plain: [String: Any] = [:]
        for (key, value) in userInfo {
            guard let key = key as? String else { continue }
            plain[key] = value
        }
        guard JSONSerialization.isValidJSONObject(plain), let data = try? JSONSerialization.data(withJSONObject: plain) else { return nil }
        return try? JSONDecoder().decode(T.self, from: data)
    }

    /// Decodes `T` from JSON bytes; nil when malformed.
    public static func decode<T: Decodable>(_ type: T.Type, fromJSON data: Data) -> T? {
        try? JSONDecoder().decode(T.self, from: data)
    }
}
