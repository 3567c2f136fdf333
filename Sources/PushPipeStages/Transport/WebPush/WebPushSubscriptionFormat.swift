import Foundation
import PushPipeCore

/// A browser's `PushSubscription.toJSON()` as the register route takes it (`token_format:
/// webpush`): `{"endpoint": "https://…", "expirationTime": null, "keys": {"p256dh": …, "auth": …}}`.
///
/// It is stored as its compact JSON (endpoint and keys), scoped by its endpoint: the same
/// browser subscribing again with new keys replaces its old subscription. Whether the key is
/// a point on P-256, and the endpoint a push service the pipeline sends to, its `webpush`
/// transport checks (a `TokenValidator`) before the route stores it.
struct WebPushSubscriptionFormat: TokenFormat {
    var name: String { "webpush" }
    var summary: String { "A browser's `PushSubscription.toJSON()`; the same endpoint registered again replaces it." }
    var carriesScope: Bool { true }

    var schema: JSON {
        [
            "type": "object", "required": ["endpoint", "keys"],
            "properties": [
                "endpoint": ["type": "string", "format": "uri", "pattern": "^https://[A-Za-z0-9.-]+(:[0-9]+)?/", "maxLength": 2048],
                "expirationTime": ["type": ["integer", "null"]],
                "keys": [
                    "type": "object", "required": ["p256dh", "auth"],
                    // 65 bytes from 0x04 in base64url: "B", then 85 characters, then one whose low bits are 0.
                    "properties": [
                        "p256dh": ["type": "string", "pattern": "^B[A-Za-z0-9_-]{85}[AEIMQUYcgkosw048]$"],
                        "auth": ["type": "string", "pattern": "^[A-Za-z0-9_-]{21}[AQgw]$"],
                    ],
                ],
            ],
        ]
    }

    /// The stored value and the endpoint (the scope), or a 400 naming the field.
    func registration(_ value: JSON?, field: String) throws -> (token: String, scope: String?) {
        guard let value, value != .null else { throw RouteError.badRequest("missing field '\(field)'", field: field) }
        guard value.objectValue != nil else {
            throw RouteError.unprocessable("'\(field)' must be a PushSubscription object, found \(value.typeName)", field: field)
        }
        guard let endpoint = value["endpoint"]?.stringValue, endpoint.utf8.count <= 2048,
            let url = URL(string: endpoint), url.scheme == "https", let host = url.host, !host.isEmpty
        else {
            throw RouteError.badRequest("'\(field).endpoint' must be an https URL", field: "\(field).endpoint")
        }
        guard let p256dhText = value["keys"]?["p256dh"]?.stringValue, let p256dh = Data(base64URLEncoded: p256dhText),
            p256dh.count == 65, p256dh.first == 0x04
        else {
            throw RouteError.badRequest(
                "'\(field).keys.p256dh' must be a base64url uncompressed P-256 point (65 bytes)",
                field: "\(field).keys.p256dh"
            )
        }
        guard let authText = value["keys"]?["auth"]?.stringValue, let auth = Data(base64URLEncoded: authText), auth.count == 16 else {
            throw RouteError.badRequest("'\(field).keys.auth' must be a base64url 16-byte secret", field: "\(field).keys.auth")
        }
        let stored: JSON = [
            "endpoint": .string(endpoint),
            "keys": ["p256dh": .string(p256dh.base64URLEncodedString()), "auth": .string(auth.base64URLEncodedString())],
        ]
        return (stored.compactText, endpoint)
    }

    /// The push service and the start of the browser's id say which browser it is; the first
    /// characters of the stored JSON would all be `{"endpoint`.
    func mask(_ token: String) -> String? {
        guard let endpoint = Self.endpoint(of: token) else { return nil }
        if let (host, id) = Self.plainHostAndID(endpoint) { return host + "/" + TokenMask.mask(String(id)) }
        guard let url = URL(string: endpoint), let host = url.host else { return nil }
        return host + "/" + TokenMask.mask(url.lastPathComponent)
    }

    /// `https://host[:port]/…/id`'s host and last component read off the bytes, as `URL` reads
    /// them: every delivery's record and log line masks its token, and a `URL` per mask
    /// would cost more than the rest of it. Nil for anything less plain (credentials,
    /// brackets, escapes, parameters, a query, a fragment, a trailing slash, a byte beyond
    /// ASCII), which `URL` reads.
    static func plainHostAndID(_ endpoint: String) -> (host: Substring, id: Substring)? {
        let bytes = endpoint.utf8
        guard bytes.starts(with: "https://".utf8) else { return nil }
        let start = bytes.index(bytes.startIndex, offsetBy: 8)
        var firstSlash: String.Index?
        var lastSlash: String.Index?
        var colon: String.Index?
        var index = start
        while index != bytes.endIndex {
            switch bytes[index] {
            case UInt8(ascii: "/"):
                if firstSlash == nil { firstSlash = index }
                lastSlash = index
            case UInt8(ascii: ":"):
                if firstSlash == nil, colon == nil { colon = index }
            case UInt8(ascii: "@"), UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"),
                UInt8(ascii: ";"), UInt8(ascii: "\\"), 0x80...:
                return nil
            default:
                break
            }
            bytes.formIndex(after: &index)
        }
        guard let firstSlash, let lastSlash, bytes.index(after: lastSlash) != bytes.endIndex else { return nil }
        let hostEnd = colon ?? firstSlash
        guard hostEnd > start else { return nil }
        if let colon {
            // A port is digits, or `URL` reads no URL at all.
            let port = bytes[bytes.index(after: colon)..<firstSlash]
            guard !port.isEmpty, port.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        }
        return (endpoint[start..<hostEnd], endpoint[bytes.index(after: lastSlash)...])
    }

    /// The endpoint (the subscription's address, its last component the browser's id) cut to
    /// the start of that id.
    func maskURL(_ url: String, token: String) -> String? {
        guard Self.endpoint(of: token) == url, let slash = url.lastIndex(of: "/") else { return nil }
        return url[...slash] + TokenMask.mask(String(url[url.index(after: slash)...]))
    }

    /// The endpoint of a stored subscription; nil for any other token.
    private static func endpoint(of token: String) -> String? {
        guard token.utf8.first == UInt8(ascii: "{") else { return nil }
        // As the register route stores it (`compactText`, endpoint first): read without parsing
        // the document, unless the endpoint holds an escape.
        let stored = #"{"endpoint":""#
        if token.hasPrefix(stored) {
            let rest = token.utf8.dropFirst(stored.utf8.count)
            if let quote = rest.firstIndex(of: UInt8(ascii: "\"")), !rest[..<quote].contains(UInt8(ascii: "\\")) {
                return String(Substring(rest[..<quote]))
            }
        }
        return try? JSON.parse(token)["endpoint"]?.stringValue
    }
}
