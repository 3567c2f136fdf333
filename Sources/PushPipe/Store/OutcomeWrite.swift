/// The writes stores group into shared transactions (`GroupCommit`): they arrive from many
/// tasks at once, one or two small rows each.
enum OutcomeWrite: Sendable {
    case history(HistoryEntry)
    case state([StateWrite], pipeline: String)
    case outcome(deliveries: [DeliveryRecord], history: [HistoryEntry], state: [StateWrite], pipeline: String)
    case enqueue(QueuedEvent)
    case dequeue(pipeline: String, eventID: String)
}
