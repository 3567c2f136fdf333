/// What a renderer produces for one recipient token: a payload plus the delivery options
/// a transport needs (headers such as push type or priority are transport-specific and
/// travel as `options`).
public struct RenderedNotification: Sendable {
    public var token: DeviceToken
    public var payload: JSON
    public var options: [String: JSON]
    /// What the history route shows for this notification; defaults to the payload.
    public var historyRecord: JSON?

    public init(token: DeviceToken, payload: JSON, options: [String: JSON] = [:], historyRecord: JSON? = nil) {
        self.token = token
        self.payload = payload
        self.options = options
        self.historyRecord = historyRecord
    }
}
