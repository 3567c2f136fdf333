import Foundation

/// A push token of one kind. Kinds are named per pipeline (`device`, `push-to-start`,
/// `fcm`, ...) so that a token registered for one purpose is never used for another.
public struct DeviceToken: Sendable, Hashable, CustomStringConvertible {
    public var user: String
    public var kind: String
    public var value: String
    /// For kinds with one token per scope (a Live Activity's update token per activity id).
    public var scope: String
    public var updatedAt: Double

    public init(user: String, kind: String, value: String, scope: String = "", updatedAt: Double = 0) {
        self.user = user
        self.kind = kind
        self.value = value
        self.scope = scope
        self.updatedAt = updatedAt
    }

    /// Safe for logs: the first 8 characters and an ellipsis.
    public var masked: String { TokenMask.mask(value) }

    /// Whether `value` is ASCII hex only (`0-9`, `A-F`, `a-f`), as an APNs token is: what may go
    /// into a request path unescaped. `Character.isHexDigit` also takes fullwidth digits.
    public static func isHex(_ value: String) -> Bool {
        value.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) }
    }
    public var description: String { "\(kind) token \(masked) of user \(user)" }
}
