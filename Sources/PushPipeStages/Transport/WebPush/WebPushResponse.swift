import PushPipeCore

/// A push service's answer (RFC 8030 §5, §8), as a transport outcome.
struct WebPushResponse: Sendable {
    var status: Int
    var location: String?
    var retryAfter: Double?
    var body: String

    var outcome: TransportOutcome {
        let detail = body.isEmpty ? "" : ": \(body.prefix(200))"
        switch status {
        case 200..<300:
            return .delivered(providerID: location)
        case 404, 410:
            // Expired or unsubscribed: real services answer either.
            return .dropToken(reason: "\(status) subscription gone\(detail)", since: nil)
        case 413:
            return .configError(reason: "413 payload too large for the push service\(detail)")
        case 429, 500..<600:
            return .retryAfter(seconds: retryAfter.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }, reason: "\(status)\(detail)")
        case 401, 403:
            return .configError(reason: "\(status) VAPID refused\(detail)")
        default:
            return .configError(reason: "\(status)\(detail)")
        }
    }
}
