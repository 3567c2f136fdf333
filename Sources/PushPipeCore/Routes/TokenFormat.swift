import Foundation

/// How one provider's tokens are written (a route's `token_format`): what a register route
/// accepts and stores, and how logs show one. Transports describe their own
/// (`StageDescriptor.tokenFormats`), so the core knows no provider's tokens; it has only
/// `opaque`, which any token passes.
public protocol TokenFormat: Sendable {
    /// Its name in a route's `token_format`.
    var name: String { get }
    /// One sentence for the docs and `pushpipe stages`.
    var summary: String { get }
    /// What `registration` accepts, as a JSON Schema (`pushpipe openapi`).
    var schema: JSON { get }
    /// Whether a token names its own scope, so that registering it replaces the token of that
    /// scope (a browser subscribing again).
    var carriesScope: Bool { get }
    /// The token to store and, for a format that carries one, its scope; or a 400 naming the field.
    func registration(_ value: JSON?, field: String) throws -> (token: String, scope: String?)
    /// How logs show a stored token of this format that the first characters would show badly
    /// (a document); nil for any other token.
    func mask(_ token: String) -> String?
    /// How logs show a request's `url` made from `token` when the URL holds the token otherwise
    /// than verbatim; nil when it does not.
    func maskURL(_ url: String, token: String) -> String?
}

extension TokenFormat {
    public var carriesScope: Bool { false }
    public func mask(_ token: String) -> String? { nil }
    public func maskURL(_ url: String, token: String) -> String? { nil }

    /// The stored token alone (a path parameter, a lookup).
    public func normalize(_ value: JSON?, field: String) throws -> String {
        try registration(value, field: field).token
    }

    /// The field's string, trimmed of spaces; or a 400 (missing) or 422 (not a string) naming it.
    public func text(_ value: JSON?, field: String) throws -> String {
        guard let value, value != .null else { throw RouteError.badRequest("missing field '\(field)'", field: field) }
        guard case .string(let raw) = value else {
            throw RouteError.unprocessable("'\(field)' must be a string, found \(value.typeName)", field: field)
        }
        return raw.trimmingCharacters(in: .whitespaces)
    }
}

/// Any provider's token as it is given: 1 to 4096 visible characters.
public struct OpaqueTokenFormat: TokenFormat {
    public init() {}
    public var name: String { "opaque" }
    public var summary: String { "1 to 4096 characters without spaces or control characters, stored as given." }
    public var schema: JSON { ["type": "string", "minLength": 1, "maxLength": 4096, "pattern": "^[^\\s\\x00-\\x1f]+$"] }

    public func registration(_ value: JSON?, field: String) throws -> (token: String, scope: String?) {
        let token = try text(value, field: field)
        guard (1...4096).contains(token.count),
            !token.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control })
        else {
            throw RouteError.badRequest("'\(field)' must be 1 to 4096 characters without spaces or control characters", field: field)
        }
        return (token, nil)
    }
}
