/// What became of each event (`EventRecord`), and the dead letters among them. Records are
/// written by `DeliveryStore.recordOutcome`, in the transaction of the deliveries they tell of.
public protocol EventRecordStore: Sendable {
    /// The records of the event `eventID`, of one pipeline or of every one (nil), with the
    /// events of that id still queued (accepted and not finished, or a replay waiting).
    func eventRecords(eventID: String, pipeline: String?) async throws -> (records: [EventRecord], queued: [QueuedEvent])
    /// Dead letters, the newest first: at most `limit`, of one pipeline or all, changed at or
    /// after `since` (UNIX seconds).
    func deadLetters(pipeline: String?, since: Double?, limit: Int) async throws -> [EventRecord]
    /// How many dead letters each pipeline holds (a gauge).
    func deadLetterCounts() async throws -> [String: Int]
    /// Queues `replay` (its `replayOf` the dead letter) and marks the record accepted, in one
    /// transaction: false, and nothing changes, unless the record is a dead letter still.
    func replayDeadLetter(_ replay: QueuedEvent) async throws -> Bool
}

extension EventRecordStore {
    /// The event as its caller sees it: a queued event is accepted (or processing, when its
    /// record says retries are under way), whatever an earlier record of it says.
    public func eventStatus(eventID: String, pipeline: String?) async throws -> [EventRecord] {
        let (records, queued) = try await eventRecords(eventID: eventID, pipeline: pipeline)
        var byPipeline: [String: EventRecord] = [:]
        for record in records { byPipeline[record.pipeline] = record }
        for event in queued {
            // A held event waits as its record says (`scheduled`, `deferred`, `batched`) until it is sent.
            let held = event.source == QueuedEventIntake.heldKey
            guard var record = byPipeline[event.pipeline] else {
                var record = EventRecord(
                    pipeline: event.pipeline,
                    eventID: event.eventID,
                    state: held ? .scheduled : .accepted,
                    source: event.origin ?? event.source,
                    caller: event.caller,
                    user: event.user,
                    acceptedAt: event.time,
                    updatedAt: event.time
                )
                record.heldUntil = held ? event.holds.last?.until : nil
                byPipeline[event.pipeline] = record
                continue
            }
            if record.state != .processing, !(held && record.state.isHeld) { record.state = .accepted }
            byPipeline[event.pipeline] = record
        }
        return byPipeline.values.sorted { $0.pipeline < $1.pipeline }
    }
}
