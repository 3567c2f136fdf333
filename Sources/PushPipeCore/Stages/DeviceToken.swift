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

public enum TokenMask {
    /// A request's URL as logs and taps may show it: an APNs token in the path masked, and a
    /// Web Push endpoint (the subscription's address, its last component the browser's id) cut
    /// to the start of that id.
    public static func maskURL(_ url: String, token: String) -> String {
        if !token.isEmpty, url.contains(token) { return url.replacingOccurrences(of: token, with: mask(token)) }
        guard webPushEndpoint(of: token) == url, let slash = url.lastIndex(of: "/") else { return url }
        return url[...slash] + mask(String(url[url.index(after: slash)...]))
    }

    /// Walks only the kept characters: `count` walked all 64 of an APNs token, twice per delivery.
    public static func mask(_ token: String, keep: Int = 8) -> String {
        // A Web Push subscription (its JSON): the push service and the start of its id say
        // which browser it is; its first characters would all be `{"endpoint`.
        if let endpoint = webPushEndpoint(of: token), let url = URL(string: endpoint), let host = url.host {
            return host + "/" + mask(url.lastPathComponent, keep: keep)
        }
        // Tokens are ASCII: then the kept characters are the first bytes (one character each,
        // and the next byte starts no combining sequence), with no grapheme walk.
        if case let ascii?? = token.utf8.withContiguousStorageIfAvailable({ bytes -> String? in
            guard bytes.count > keep, bytes[...keep].allSatisfy({ $0 < 0x80 }) else { return nil }
            return String(decoding: bytes[..<keep], as: UTF8.self) + "…"
        }) {
            return ascii
        }
        guard let end = token.index(token.startIndex, offsetBy: keep, limitedBy: token.endIndex), end != token.endIndex else {
            return String(repeating: "•", count: token.count)
        }
        return token[..<end] + "…"
    }

    /// The endpoint of a Web Push subscription (stored as its JSON); nil for any other token.
    private static func webPushEndpoint(of token: String) -> String? {
        guard token.utf8.first == UInt8(ascii: "{") else { return nil }
        return try? JSON.parse(token)["endpoint"]?.stringValue
    }
}
