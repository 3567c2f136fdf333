/// What a renderer produces for one recipient token: a payload plus the delivery options
/// a transport needs (headers such as push type or priority are transport-specific and
/// travel as `options`).
import Foundation

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
        self.token = token
        self.payload = payload
        payloadBytes = payload.serialized()
        self.options = options
        self.historyRecord = historyRecord
    }
}
