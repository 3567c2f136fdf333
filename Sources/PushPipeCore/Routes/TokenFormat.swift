/// How a route checks a token before storing it.
enum TokenFormat: String, Sendable {
    /// APNs tokens: even-length hex, 32 to 400 characters, stored lower-case. Apple warns
    /// against assuming 64 characters; Live Activity tokens of 160 are common.
    case hex
    /// FCM registration tokens and other opaque strings: 1 to 4096 visible characters.
    case opaque

    /// What `normalize` accepts, as a JSON Schema (`pushpipe openapi`).
    var schema: JSON {
        switch self {
        case .hex: ["type": "string", "pattern": "^([0-9a-fA-F]{2}){16,200}$"]
        case .opaque: ["type": "string", "minLength": 1, "maxLength": 4096, "pattern": "^[^\\s\\x00-\\x1f]+$"]
        }
    }

    func normalize(_ value: JSON?, field: String) throws -> String {
        guard let value, value != .null else { throw RouteError.badRequest("missing field '\(field)'", field: field) }
        guard case .string(let raw) = value else {
            throw RouteError.unprocessable("'\(field)' must be a string, found \(value.typeName)", field: field)
        }
        let token = raw.trimmingCharacters(in: .whitespaces)
        switch self {
        case .hex:
            guard (32...400).contains(token.utf8.count), token.utf8.count % 2 == 0, DeviceToken.isHex(token) else {
                throw RouteError.badRequest("'\(field)' must be an even number (32 to 400) of hex characters", field: field)
            }
            return token.lowercased()
        case .opaque:
            guard (1...4096).contains(token.count),
                  !token.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control }) else {
                throw RouteError.badRequest("'\(field)' must be 1 to 4096 characters without spaces or control characters", field: field)
            }
            return token
        }
    }
}
