/// What a valid user id looks like for a route. A user id ends up in the store, in URLs a
/// poller builds (OGS: `/api/v1/players/{id}/full`) and in logs, so a route checks it the
/// same way whether it comes from the body or the path.
public enum UserIDFormat: String, Sendable, CaseIterable {
    /// 1 to 128 characters of text, no control characters; a JSON number is refused, not
    /// coerced (an install id is a string).
    case text
    /// A non-negative integer (OGS player ids), as a string of 1 to 20 digits or a JSON number.
    case digits

    /// The user id in a body value, or a 4xx naming `field`.
    /// What a user id of this format is, as a JSON Schema (`pushpipe openapi`).
    public var schema: JSON {
        switch self {
        case .text: ["type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[^\\x00-\\x1f]+$"]
        case .digits: ["type": ["string", "integer"], "pattern": "^[0-9]{1,20}$", "minimum": 0]
        }
    }

    /// The same in a path, where every value is text.
    public var pathSchema: JSON {
        self == .digits ? ["type": "string", "pattern": "^[0-9]{1,20}$"] : schema
    }

    public func user(from value: JSON?, field: String) throws -> String {
        guard let value, value != .null else { throw RouteError.badRequest("missing field '\(field)'", field: field) }
        switch (self, value) {
        case (_, .string(let string)):
            return try user(fromText: string.trimmingCharacters(in: .whitespaces), field: field)
        case (.digits, .int(let number)) where number >= 0:
            return String(number)
        case (.digits, _):
            throw RouteError.unprocessable("'\(field)' must be a user id of digits (a string or a number), found \(value.typeName)", field: field)
        case (.text, _):
            throw RouteError.unprocessable("'\(field)' must be a string, found \(value.typeName)", field: field)
        }
    }

    /// The user id in a path parameter or a string field, or a 400 naming `field`.
    public func user(fromText text: String, field: String) throws -> String {
        switch self {
        case .text:
            guard (1...128).contains(text.count), !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw RouteError.badRequest("'\(field)' must be 1 to 128 characters without control characters", field: field)
            }
        case .digits:
            guard (1...20).contains(text.count), text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                throw RouteError.badRequest("'\(field)' must be a user id of 1 to 20 digits", field: field)
            }
        }
        return text
    }
}
