import Foundation

/// What a renderer produces for one recipient token: a payload plus the delivery options
/// a transport needs (headers such as push type or priority are transport-specific and
/// travel as `options`).
public struct RenderedNotification: Sendable {
    public var token: DeviceToken
    public var payload: JSON {
        didSet { payloadBytes = payload.serialized() }
    }
    /// The payload serialized once: transports that send it as it is and the history record
    /// share these bytes instead of serializing the same JSON twice per notification.
    public private(set) var payloadBytes: Data
    public var options: [String: JSON]
    /// What the history route shows for this notification; defaults to the payload.
    public var historyRecord: JSON?

    public init(token: DeviceToken, payload: JSON, options: [String: JSON] = [:], historyRecord: JSON? = nil) {
        self.init(token: token, payload: payload, payloadBytes: payload.serialized(), options: options, historyRecord: historyRecord)
    }

    private init(token: DeviceToken, payload: JSON, payloadBytes: Data, options: [String: JSON], historyRecord: JSON?) {
        self.token = token
        self.payload = payload
        self.payloadBytes = payloadBytes
        self.options = options
        self.historyRecord = historyRecord
    }

    /// The same payload for each token, serialized once (an event for every user has many).
    public static func each(of tokens: [DeviceToken], payload: JSON, options: [String: JSON] = [:], historyRecord: JSON? = nil)
        -> [RenderedNotification]
    {
        guard !tokens.isEmpty else { return [] }
        let bytes = payload.serialized()
        return tokens.map { RenderedNotification(token: $0, payload: payload, payloadBytes: bytes, options: options, historyRecord: historyRecord) }
    }
}
