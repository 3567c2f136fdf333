import Foundation
import PushPipeCore

/// One FCM answer and what it means (Firebase's "FCM error codes" for the HTTP v1 API).
struct FCMResponse: Sendable {
    var status: Int
    var body: JSON?
    var retryAfter: Double?

    var errorCode: String? {
        body?["error"]?["details"]?.arrayValue?.first { $0["@type"]?.stringValue?.hasSuffix("FcmError") == true }?["errorCode"]?.stringValue
    }
    var message: String { body?["error"]?["message"]?.stringValue ?? "HTTP \(status)" }

    enum Action { case none, refreshAccessToken }

    var outcome: (TransportOutcome, Action) {
        if status == 200 { return (.delivered(providerID: body?["name"]?.stringValue), .none) }
        switch errorCode {
        case "UNREGISTERED", "SENDER_ID_MISMATCH":
            return (.dropToken(reason: ProviderReason(code: errorCode!, "\(errorCode!): \(message)"), since: nil), .none)
        case "INVALID_ARGUMENT" where message.lowercased().contains("registration token"):
            return (.dropToken(reason: ProviderReason(code: "INVALID_ARGUMENT", "INVALID_ARGUMENT: \(message)"), since: nil), .none)
        case "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL":
            // QUOTA_EXCEEDED: the project's quota, every send waits its Retry-After.
            let reason = ProviderReason(code: errorCode!, "\(errorCode!): \(message)", throttlesSender: errorCode == "QUOTA_EXCEEDED")
            return (.retryAfter(seconds: retryAfter, reason: reason), .none)
        case "THIRD_PARTY_AUTH_ERROR":
            return (
                .configError(
                    reason: ProviderReason(
                        code: "THIRD_PARTY_AUTH_ERROR",
                        "THIRD_PARTY_AUTH_ERROR: the APNs credentials in Firebase are wrong (\(message))"
                    )
                ), .none
            )
        case nil where status == 401:
            // The access token expired or was revoked: a new one, then once more.
            return (.retryAfter(seconds: 0, reason: .other("access token rejected (401)")), .refreshAccessToken)
        case nil where status == 429 || status >= 500:
            return (.retryAfter(seconds: retryAfter, reason: .http(status, "HTTP \(status): \(message)")), .none)
        default:
            let text = "\(errorCode ?? "HTTP \(status)"): \(message)"
            return (.configError(reason: errorCode.map { ProviderReason(code: $0, text) } ?? .http(status, text)), .none)
        }
    }
}
