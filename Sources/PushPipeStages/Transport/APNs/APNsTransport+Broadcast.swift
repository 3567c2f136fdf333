import Foundation
import PushPipeCore

/// iOS 18 broadcast channels: a token of a broadcast kind is a channel id, and one request to
/// the broadcast endpoint updates (or ends) every Live Activity that listens to the channel
/// (Apple's "Sending broadcast push notification requests to APNs").
extension APNsTransport {
    static let maximumBroadcastPayloadBytes = 5120

    func prepareBroadcast(_ notification: RenderedNotification, pushType: String, context: StageContext) throws -> OutgoingRequest {
        let channel = notification.token.value
        guard (1...256).contains(channel.utf8.count), channel.utf8.allSatisfy(Self.isBase64) else {
            throw StageError(.invalidEvent, stage: context.stage, "\(notification.token.masked) is not a broadcast channel id (base64)")
        }
        guard pushType == "liveactivity" else {
            throw StageError(.invalidEvent, stage: context.stage, "a \(pushType) push cannot go to a broadcast channel")
        }
        // A broadcast cannot start an activity: the app starts it and subscribes it to the channel.
        guard notification.payload["aps"]?["event"]?.stringValue != "start" else {
            throw StageError(.invalidEvent, stage: context.stage, "a broadcast cannot start a Live Activity, only update or end it")
        }
        let options = notification.options
        let priority = options["priority"]?.intValue ?? 10
        guard [10, 5, 1].contains(priority) else {
            throw StageError(.invalidEvent, stage: context.stage, "broadcast priority must be 10, 5 or 1, not \(priority)")
        }
        let headers: [(name: String, value: String)] = [
            ("apns-channel-id", channel), ("apns-push-type", "liveactivity"), ("apns-priority", String(priority)),
            // 0: delivered once, now; a channel that stores no message refuses any other value.
            ("apns-expiration", String(options["expiration"]?.intValue ?? 0)), ("apns-request-id", RandomIdentifier.uuid()),
        ]
        let request = OutgoingRequest(url: "\(baseURLText)/4/broadcasts/apps/\(configuration.bundleId)", headers: headers, sending: notification)
        guard request.bodyBytes.count <= Self.maximumBroadcastPayloadBytes else {
            throw StageError(
                .payloadTooLarge,
                stage: context.stage,
                "payload is \(request.bodyBytes.count) bytes; APNs accepts \(Self.maximumBroadcastPayloadBytes) for a broadcast"
            )
        }
        return request
    }

    static func isBase64(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
            true
        default: false
        }
    }
}
