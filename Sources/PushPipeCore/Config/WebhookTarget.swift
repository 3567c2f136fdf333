import Foundation

/// One entry of a pipeline's `webhooks:`: where its outcomes are POSTed, signed with `secret`
/// as the Standard Webhooks specification says, and which kinds of outcome it wants.
public struct WebhookTarget: Sendable, Decodable, Equatable {
    public var url: String
    /// `whsec_` and the base64 of the key, as Standard Webhooks libraries take it.
    public var secret: String
    public var events: [String]

    public static let outcomeTypes = ["delivered", "failed", "dead_token", "dead_letter"]

    public static let schema = Schema([
        .required("url", .string, "Where outcomes are POSTed (http or https), e.g. `https://backend.example/hooks/push`."),
        .required("secret", .string, "Signing secret: `whsec_` and the base64 of a random key of 16 to 128 bytes (Standard Webhooks). Use `${VAR}`."),
        SchemaKey(
            "events",
            .list(.oneOf(outcomeTypes)),
            default: .array(outcomeTypes.map(JSON.string)),
            "Outcomes to send: `delivered` (an event reached every recipient, or some, the others' tokens dead), `failed` (every token was dead), "
                + "`dead_token` (a token the provider declared dead, removed), `dead_letter`."
        ),
    ])

    public init(url: String, secret: String, events: [String] = WebhookTarget.outcomeTypes) {
        self.url = url
        self.secret = secret
        self.events = events
    }

    /// The key bytes of `secret`; nil when it is not `whsec_` and base64.
    public var key: [UInt8]? {
        guard secret.hasPrefix("whsec_"), let bytes = Data(base64Encoded: String(secret.dropFirst("whsec_".count))) else { return nil }
        return Array(bytes)
    }

    /// What is wrong with it, as the key path and the problem, or nil.
    func problem() -> (key: String, message: String, expected: String)? {
        let lowered = url.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
            return ("url", "'\(url)' is not an http or https URL", "https://host/path")
        }
        guard let key, (16...128).contains(key.count) else {
            return (
                "secret", "the secret is not `whsec_` and the base64 of a key of 16 to 128 bytes",
                "whsec_ and base64, e.g. from `openssl rand -base64 32`"
            )
        }
        return nil
    }
}
