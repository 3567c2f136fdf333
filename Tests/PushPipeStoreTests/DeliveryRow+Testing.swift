import PushPipeCore

extension DeliveryRow {
    /// A delivery of `eventID` to `user`'s device `token`, as the runtime hands one to the store.
    static func of(
        _ eventID: String,
        user: String,
        token: String,
        outcome: DeliveryOutcome = .delivered,
        reason: String? = nil,
        providerID: String? = nil,
        at: Double,
        history: JSON? = nil
    ) -> DeliveryRow {
        DeliveryRow(
            eventID: eventID,
            delivery: Delivery(
                user: user,
                tokenKind: "device",
                token: token,
                transport: "apns",
                outcome: outcome,
                providerID: providerID,
                attempts: 1,
                reason: reason,
                at: at
            ),
            history: history.map(Record.json)
        )
    }
}
