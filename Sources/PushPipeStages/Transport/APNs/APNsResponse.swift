import Foundation
import PushPipeCore

/// One APNs answer, and what it means for the delivery (Apple's "Handling notification
/// responses from APNs": status codes and reasons).
struct APNsResponse: Sendable {
    var status: Int
    var apnsID: String?
    /// `apns-channel-id` of a channel-management answer.
    var channelID: String? = nil
    var body: Data

    /// What an APNs connection keeps of an answer: its ids, and a body up to a stream's
    /// receive window (an error's JSON is small; the channel-management API lists a bundle's
    /// channels, and a longer list is cut there instead of waiting for a window never given).
    static let reading = HTTP2Connection.Reading(keptHeaders: ["apns-id", "apns-unique-id", "apns-channel-id"], bodyLimit: 65_535)

    init(status: Int, apnsID: String?, channelID: String? = nil, body: Data) {
        self.status = status
        self.apnsID = apnsID
        self.channelID = channelID
        self.body = body
    }

    init(_ answer: HTTP2Answer) {
        status = answer.status
        // A broadcast's answer names the message sent to the channel (`apns-unique-id`).
        apnsID = answer.last("apns-unique-id") ?? answer.first("apns-id")
        // A channel created by the channel-management API.
        channelID = answer.last("apns-channel-id")
        body = answer.body.map { Data($0.readableBytesView) } ?? Data()
    }

    /// What the connection pool must do besides reporting the outcome.
    enum ConnectionAction { case keep, reconnect, refreshToken }

    var outcome: (TransportOutcome, ConnectionAction) {
        // Error answers carry JSON (`reason`; 410 also `timestamp`); accepted ones have no body.
        let json = body.isEmpty ? nil : try? JSON.parse(body)
        let apnsReason = json?["reason"]?.stringValue
        // APNs' reason is its code (`BadDeviceToken`); a body without one, the status's.
        let reason = apnsReason.map { ProviderReason(code: $0, $0) } ?? .http(status, "HTTP \(status)")
        switch (status, apnsReason) {
        case (200, _):
            return (.delivered(providerID: apnsID), .keep)
        case (400, "BadChannelId"), (400, "ChannelNotRegistered"):
            // A broadcast to a channel deleted or never created: the channel is the token.
            return (.dropToken(reason: ProviderReason(code: apnsReason!, "\(apnsReason!): the broadcast channel does not exist"), since: nil), .keep)
        case (400, "BadDeviceToken"):
            return (
                .dropToken(
                    reason: ProviderReason(code: "BadDeviceToken", "BadDeviceToken (check that the sandbox/production host matches the token)"),
                    since: nil
                ), .keep
            )
        case (410, _):
            // The time APNs last saw the token valid, in milliseconds.
            return (.dropToken(reason: reason, since: json?["timestamp"]?.doubleValue.map { $0 / 1000 }), .keep)
        case (400, "IdleTimeout"):
            return (.retryAfter(seconds: 0, reason: reason), .reconnect)
        case (403, "ExpiredProviderToken"):
            return (.retryAfter(seconds: 0, reason: reason), .refreshToken)
        case (403, "UnrelatedKeyIdInToken"):
            return (.retryAfter(seconds: 0, reason: reason), .reconnect)
        case (429, "TooManyProviderTokenUpdates"):
            // The token is valid, only new to APNs too often: keep it and retry with backoff.
            return (
                .retryAfter(
                    seconds: nil,
                    reason: ProviderReason(
                        code: "TooManyProviderTokenUpdates",
                        "TooManyProviderTokenUpdates: the provider token was rotated too often"
                    )
                ), .keep
            )
        case (429, _):
            return (.retryAfter(seconds: nil, reason: reason), .keep)
        case (500..., "Shutdown"):
            return (.retryAfter(seconds: nil, reason: reason), .reconnect)
        case (500..., _):
            return (.retryAfter(seconds: nil, reason: reason), .keep)
        default:
            // DeviceTokenNotForTopic, TopicDisallowed, BadTopic, InvalidProviderToken,
            // PayloadTooLarge, ...: the request or the credentials are wrong; retrying cannot help.
            return (.configError(reason: ProviderReason(code: reason.code, "\(status) \(reason.text)")), .keep)
        }
    }
}
