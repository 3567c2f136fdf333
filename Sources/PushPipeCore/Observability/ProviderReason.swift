/// Why a provider did not accept a notification (or why it never reached one): a code for
/// metrics and conditions (`BadDeviceToken`, `UNREGISTERED`, `HTTP_410`, `other`) and a text
/// for people. The transport that read the answer gives both apart, so nothing parses the text
/// back into a code, and the core needs to know no provider's way of naming its errors.
public struct ProviderReason: Sendable, Equatable, CustomStringConvertible {
    /// Short and from a small set per provider: a metric label's value.
    public var code: String
    /// What people read (logs, the status route, dead letters): may vary per request.
    public var text: String
    /// The provider asked the whole sender, not one device, to slow down (FCM's
    /// `QUOTA_EXCEEDED`, an HTTP 429): with a `Retry-After`, every send to it waits.
    public var throttlesSender: Bool

    public init(code: String, _ text: String, throttlesSender: Bool = false) {
        self.code = code
        self.text = text
        self.throttlesSender = throttlesSender
    }

    /// A failure that is not a provider's answer (no connection, bad credentials, a timeout).
    public static func other(_ text: String) -> ProviderReason { ProviderReason(code: otherCode, text) }

    /// An HTTP status without a code of the provider's.
    public static func http(_ status: Int, _ text: String) -> ProviderReason {
        ProviderReason(code: "HTTP_\(status)", text, throttlesSender: status == 429)
    }

    public static let otherCode = "other"

    /// Whether `text` has the form codes have (1 to 48 letters, digits, `_`, `-` and `.`): what
    /// may become a metric label, or be repeated from a body a stranger's server wrote.
    public static func isCode(_ text: some StringProtocol, longest: Int = 48) -> Bool {
        (1...longest).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F || byte == 0x2D
                    || byte == 0x2E
            }
    }

    public var description: String { text }
}
