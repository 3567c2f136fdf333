import PushPipeCore

/// APNs device tokens (`token_format: hex`): even-length hex, 32 to 400 characters, stored
/// lower-case. Apple warns against assuming 64 characters; Live Activity tokens of 160 are common.
struct APNsTokenFormat: TokenFormat {
    var name: String { "hex" }
    var summary: String { "APNs tokens: an even number (32 to 400) of hex characters, stored lower-case." }
    var schema: JSON { ["type": "string", "pattern": "^([0-9a-fA-F]{2}){16,200}$"] }

    func registration(_ value: JSON?, field: String) throws -> (token: String, scope: String?) {
        let token = try text(value, field: field)
        guard (32...400).contains(token.utf8.count), token.utf8.count % 2 == 0, DeviceToken.isHex(token) else {
            throw RouteError.badRequest("'\(field)' must be an even number (32 to 400) of hex characters", field: field)
        }
        return (token.lowercased(), nil)
    }
}
