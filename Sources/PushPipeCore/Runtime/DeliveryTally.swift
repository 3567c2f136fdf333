/// What one event's deliveries came to, across the pages of a broadcast: counts for the
/// status, and the first reports only, so a report on 100,000 tokens stays small.
struct DeliveryTally {
    static var reportLimit: Int { 1000 }

    private(set) var total = 0
    private(set) var delivered = 0
    /// The first retry or configuration failure: why the event is not fully delivered.
    private(set) var unresolvedReason: String?
    private(set) var reports: [DeliveryReport] = []

    /// Counts `deliveries`, each of the notification at the same place in `notifications`.
    mutating func add(_ deliveries: [Delivery], of notifications: [RenderedNotification]) {
        total += deliveries.count
        for delivery in deliveries {
            if delivery.outcome == .delivered {
                delivered += 1
            } else if delivery.outcome.isUnresolved, unresolvedReason == nil {
                unresolvedReason = delivery.reason ?? delivery.outcome.rawValue
            }
        }
        for (delivery, notification) in zip(deliveries, notifications).prefix(max(0, Self.reportLimit - reports.count)) {
            reports.append(DeliveryReport(delivery, payload: notification.payload))
        }
    }

    var status: EventReport.Status {
        delivered == 0 ? .failed : unresolvedReason == nil ? .delivered : .partial
    }
}
