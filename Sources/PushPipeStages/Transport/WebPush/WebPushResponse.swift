import PushPipeCore

/// A push service's answer (RFC 8030 §5, §8), as a transport outcome. The service is one a
/// user chose, so its body is never repeated: only a short code read from it (`errno` of
/// Mozilla's JSON errors, `reason` of Apple's) reaches the reason, and from there the status
/// route, dead letters, the tap and the logs.
struct WebPushResponse: Sendable {
    var status: Int
    var location: String?
    var retryAfter: Double?
    /// A code from the body: letters, digits, `-`, `_` and `.`, at most 40 of them.
    var code: String?

    /// What an HTTP/2 connection keeps of a push service's answer.
    static let reading = HTTP2Connection.Reading(keptHeaders: ["location", "retry-after"], bodyLimit: 1024)

    init(status: Int, location: String?, retryAfter: Double?, code: String?) {
        self.status = status
        self.location = location
        self.retryAfter = retryAfter
        self.code = code
    }

    init(_ answer: HTTP2Answer) {
        self.init(
            status: answer.status,
            location: answer.first("location"),
            retryAfter: answer.first("retry-after").flatMap(Double.init),
            code: Self.code(in: answer.bodyBytes)
        )
    }

    var outcome: TransportOutcome {
        let detail = code.map { " (\($0))" } ?? ""
        switch status {
        case 200..<300:
            return .delivered(providerID: location)
        case 404, 410:
            // Expired or unsubscribed: real services answer either.
            return .dropToken(reason: .http(status, "\(status) subscription gone\(detail)"), since: nil)
        case 413:
            return .configError(reason: .http(status, "413 payload too large for the push service\(detail)"))
        case 429, 500..<600:
            return .retryAfter(seconds: retryAfter.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }, reason: .http(status, "\(status)\(detail)"))
        case 401, 403:
            return .configError(reason: .http(status, "\(status) VAPID refused\(detail)"))
        default:
            return .configError(reason: .http(status, "\(status)\(detail)"))
        }
    }

    /// The code a JSON error body names, if it names one in a form a code has.
    static func code(in body: [UInt8]) -> String? {
        guard body.first == UInt8(ascii: "{"), let json = try? JSON.parse(body) else { return nil }
        for field in ["reason", "errno", "code", "error"] {
            guard let value = json[field], let text = value.stringValue ?? value.intValue.map({ String($0) }) else { continue }
            if ProviderReason.isCode(text, longest: 40) { return text }
        }
        return nil
    }

    /// A failed request's reason without the server's words: the kind of failure only.
    static func describe(_ error: any Error) -> String {
        String(describing: type(of: error)) + ": " + TransportOutcome.sanitize(String(describing: error), limit: 120)
    }
}
