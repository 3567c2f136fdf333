/// How a route checks a token before storing it.
enum TokenFormat: String, Sendable {
    /// APNs tokens: even-length hex, 32 to 400 characters, stored lower-case. Apple warns
    /// against assuming 64 characters; Live Activity tokens of 160 are common.
    case hex
    /// FCM registration tokens and other opaque strings: 1 to 4096 visible characters.
    case opaque
    /// A browser's `PushSubscription.toJSON()` (`WebPushSubscriptionFormat`): scoped by its
    /// endpoint, so the same browser subscribing again replaces its old subscription.
    case webPush = "webpush"

    /// Whether the token names its own scope (and so replaces the token of that scope).
    var carriesScope: Bool { self == .webPush }

    /// What `normalize` accepts, as a JSON Schema (`pushpipe openapi`).
    var schema: JSON {
        switch self {
        case .hex: ["type": "string", "pattern": "^([0-9a-fA-F]{2}){16,200}$"]
        case .opaque: ["type": "string", "minLength": 1, "maxLength": 4096, "pattern": "^[^\\s\\x00-\\x1f]+$"]
        case .webPush: WebPushSubscriptionFormat.schema
        }
    }

    /// The token to store and, for a format that carries one, its scope; or a 400 naming the field.
    func registration(_ value: JSON?, field: String) throws -> (token: String, scope: String?) {
        switch self {
        case .webPush: return try WebPushSubscriptionFormat.normalize(value, field: field)
        case .hex, .opaque: return (try normalize(value, field: field), nil)
        }
    }

    func normalize(_ value: JSON?, field: String) throws -> String {
        if self == .webPush { return try registration(value, field: field).token }
        guard let value, value != .null else { throw RouteError.badRequest("missing field '\(field)'", field: field) }
        guard case .string(let raw) = value else {
            throw RouteError.unprocessable("'\(field)' must be a string, found \(value.typeName)", field: field)
        }
        let token = raw.trimmingCharacters(in: .whitespaces)
        if self == .hex {
            guard (32...400).contains(token.utf8.count), token.utf8.count % 2 == 0, DeviceToken.isHex(token) else {
                throw RouteError.badRequest("'\(field)' must be an even number (32 to 400) of hex characters", field: field)
            }
            return token.lowercased()
        }
        guard (1...4096).contains(token.count),
              !token.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control }) else {
            throw RouteError.badRequest("'\(field)' must be 1 to 4096 characters without spaces or control characters", field: field)
        }
        return token
    }
}
