import Foundation

/// The exact request a transport would send: what dry runs print and pipeline tests compare.
public struct OutgoingRequest: Sendable {
    private var storage: CopyOnWrite<Fields>

    public var method: String {
        _read { yield storage.fields.method }
        set { storage.update { $0.method = newValue } }
    }

    public var url: String {
        _read { yield storage.fields.url }
        set { storage.update { $0.url = newValue } }
    }

    public var headers: [(name: String, value: String)] {
        _read { yield storage.fields.headers }
        set { storage.update { $0.headers = newValue } }
    }

    public var body: JSON {
        _read { yield storage.fields.body }
        set { storage.update { $0.body = newValue } }
    }

    /// The body as sent, serialized once (size checks and the wire use the same bytes).
    public var bodyBytes: Data { _read { yield storage.fields.bodyBytes } }

    public var token: DeviceToken {
        _read { yield storage.fields.token }
        set { storage.update { $0.token = newValue } }
    }

    private struct Fields: Sendable {
        var method: String
        var url: String
        var headers: [(name: String, value: String)]
        var body: JSON
        let bodyBytes: Data
        var token: DeviceToken
    }

    public init(method: String, url: String, headers: [(name: String, value: String)], body: JSON, token: DeviceToken) {
        self.init(method: method, url: url, headers: headers, body: body, bodyBytes: body.serialized(), token: token)
    }

    /// A request carrying the notification's payload as it is, with the bytes the renderer
    /// serialized already.
    public init(method: String = "POST", url: String, headers: [(name: String, value: String)], sending notification: RenderedNotification) {
        self.init(
            method: method,
            url: url,
            headers: headers,
            body: notification.payload,
            bodyBytes: notification.payloadBytes,
            token: notification.token
        )
    }

    private init(method: String, url: String, headers: [(name: String, value: String)], body: JSON, bodyBytes: Data, token: DeviceToken) {
        storage = CopyOnWrite(Fields(method: method, url: url, headers: headers, body: body, bodyBytes: bodyBytes, token: token))
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Headers and body for comparison, with no secret removed (used only in memory).
    public var json: JSON {
        var headerObject: [String: JSON] = [:]
        for header in headers { headerObject[header.name.lowercased()] = .string(header.value) }
        return ["method": .string(method), "url": .string(url), "headers": .object(headerObject), "body": body]
    }

    /// What a tap shows: the device token masked wherever it appears (the URL of APNs or Web
    /// Push, the body of FCM, the `apns-channel-id` header of a broadcast) and the authorization
    /// header masked.
    public var maskedJSON: JSON {
        var headerObject: [String: JSON] = [:]
        for header in headers { headerObject[header.name.lowercased()] = .string(maskedValue(of: header)) }
        return [
            "method": .string(method), "url": .string(TokenMask.maskURL(url, token: token.value)),
            "headers": .object(headerObject), "body": Self.masking(token.value, as: token.masked, in: body),
        ]
    }

    static func masking(_ secret: String, as masked: String, in value: JSON) -> JSON {
        switch value {
        case .string(let text) where text == secret: .string(masked)
        case .string(let text) where !secret.isEmpty && text.contains(secret): .string(text.replacingOccurrences(of: secret, with: masked))
        case .array(let elements): .array(elements.map { masking(secret, as: masked, in: $0) })
        case .object(let members): .object(members.mapValues { masking(secret, as: masked, in: $0) })
        default: value
        }
    }

    /// A printable form: the authorization header and the device token are masked, in the
    /// body too (FCM carries the token there), as in `maskedJSON`.
    public var printable: String {
        var lines = ["\(method) \(TokenMask.maskURL(url, token: token.value))"]
        for header in headers { lines.append("\(header.name): \(maskedValue(of: header))") }
        lines.append("")
        lines.append(Self.masking(token.value, as: token.masked, in: body).prettyText)
        return lines.joined(separator: "\n")
    }

    func maskedValue(of header: (name: String, value: String)) -> String {
        if header.name.lowercased() == "authorization" { return Self.maskAuthorization(header.value) }
        return header.value == token.value ? token.masked : header.value
    }

    static func maskAuthorization(_ value: String) -> String {
        let parts = value.split(separator: " ", maxSplits: 1)
        return parts.count == 2 ? "\(parts[0]) \(TokenMask.mask(String(parts[1])))" : TokenMask.mask(value)
    }
}
