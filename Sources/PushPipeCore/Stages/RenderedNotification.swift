import Foundation

/// What a renderer produces for one recipient token: a payload plus the delivery options
/// a transport needs (headers such as push type or priority are transport-specific and
/// travel as `options`).
public struct RenderedNotification: Sendable {
    private var storage: CopyOnWrite<Fields>

    public var token: DeviceToken {
        _read { yield storage.fields.token }
        set { storage.update { $0.token = newValue } }
    }

    public var payload: JSON {
        _read { yield storage.fields.payload }
        set {
            let bytes = newValue.serialized()
            storage.update {
                $0.payload = newValue
                $0.payloadBytes = bytes
            }
        }
    }

    /// The payload serialized once: transports that send it as it is and the history record
    /// share these bytes instead of serializing the same JSON twice per notification.
    public var payloadBytes: Data { _read { yield storage.fields.payloadBytes } }

    public var options: [String: JSON] {
        _read { yield storage.fields.options }
        set { storage.update { $0.options = newValue } }
    }

    /// What the history route shows for this notification; defaults to the payload.
    public var historyRecord: JSON? {
        _read { yield storage.fields.historyRecord }
        set { storage.update { $0.historyRecord = newValue } }
    }

    private struct Fields: Sendable {
        var token: DeviceToken
        var payload: JSON
        var payloadBytes: Data
        var options: [String: JSON]
        var historyRecord: JSON?
    }

    public init(token: DeviceToken, payload: JSON, options: [String: JSON] = [:], historyRecord: JSON? = nil) {
        self.init(token: token, payload: payload, payloadBytes: payload.serialized(), options: options, historyRecord: historyRecord)
    }

    private init(token: DeviceToken, payload: JSON, payloadBytes: Data, options: [String: JSON], historyRecord: JSON?) {
        storage = CopyOnWrite(Fields(token: token, payload: payload, payloadBytes: payloadBytes, options: options, historyRecord: historyRecord))
    }

    /// The same payload for each token, serialized once (an event for every user has many).
    public static func each(
        of tokens: [DeviceToken],
        payload: JSON,
        options: [String: JSON] = [:],
        historyRecord: JSON? = nil
    )
        -> [RenderedNotification]
    {
        guard !tokens.isEmpty else { return [] }
        let bytes = payload.serialized()
        return tokens.map { RenderedNotification(token: $0, payload: payload, payloadBytes: bytes, options: options, historyRecord: historyRecord) }
    }
}
