import PushPipeCore
import Testing

extension StoreContractTests {
    /// An event's record replaces its earlier one; a queued event shows as accepted; dead
    /// letters are listed newest first, replayed once (queued with what they replay, in one
    /// transaction) or dropped, and outlive retention.
    func eventRecords(_ store: any Store) async throws {
        let recipient = Delivery(
            user: "u",
            tokenKind: "device",
            token: "ab12cd34ef",
            transport: "apns",
            outcome: .retryAfter,
            providerID: nil,
            attempts: 3,
            reason: "500 InternalServerError",
            reasonCode: "InternalServerError",
            at: 20
        )
        let processing = EventRecord(
            pipeline: "r",
            eventID: "e1",
            state: .processing,
            source: "events",
            caller: "token",
            user: "u",
            recipients: [recipient],
            acceptedAt: 10,
            updatedAt: 15
        )
        try await store.pipeline("r").recordOutcome(deliveries: [], state: [], events: [processing])
        var dead = processing
        dead.state = .deadLetter
        dead.updatedAt = 20
        dead.reason = "500 InternalServerError"
        dead.input = EventRecord.Input(time: 10, body: ["text": "hi"])
        try await store.pipeline("r").recordOutcome(deliveries: [], state: [], events: [dead])
        #expect(try await store.eventRecords(eventID: "e1", pipeline: "r").records == [dead], "the outcome replaces the processing record")
        #expect(try await store.eventRecords(eventID: "e1", pipeline: nil).records == [dead])
        #expect(try await store.eventRecords(eventID: "e1", pipeline: "other").records.isEmpty)

        let older = EventRecord(
            pipeline: "r",
            eventID: "e0",
            state: .deadLetter,
            reason: "render",
            acceptedAt: 1,
            updatedAt: 2,
            input: EventRecord.Input(time: 1, body: [:])
        )
        let delivered = EventRecord(pipeline: "r", eventID: "e2", state: .delivered, acceptedAt: 1, updatedAt: 2)
        try await store.pipeline("r").recordOutcome(deliveries: [], state: [], events: [older, delivered])
        #expect(try await store.deadLetters(pipeline: "r", since: nil, limit: 10).map(\.eventID) == ["e1", "e0"])
        #expect(try await store.deadLetters(pipeline: nil, since: 10, limit: 10).map(\.eventID) == ["e1"])
        #expect(try await store.deadLetters(pipeline: "r", since: nil, limit: 1).map(\.eventID) == ["e1"])
        #expect(try await store.deadLetterCounts() == ["r": 2])

        // Retention takes the delivered record, never a dead letter.
        #expect(try await store.pipeline("r").pruneEventRecords(unchangedSince: 100, limit: 10) == 1)
        #expect(try await store.eventRecords(eventID: "e2", pipeline: "r").records.isEmpty)
        #expect(try await store.deadLetterCounts() == ["r": 2])

        // A replay: queued with its dead letter, the record accepted; only once.
        var replay = QueuedEvent(
            pipeline: "r",
            source: QueuedEventIntake.replayKey,
            instance: "the-cli",
            eventID: "e1",
            user: "u",
            time: 10,
            body: ["text": "hi"],
            lease: .seconds(-1)
        )
        replay.caller = "token"
        replay.replayOf = dead
        #expect(try await store.replayDeadLetter(replay))
        #expect(try await store.replayDeadLetter(replay) == false, "no longer a dead letter")
        let status = try await store.eventStatus(eventID: "e1", pipeline: "r")
        #expect(status.map(\.state) == [.accepted] && status.first?.recipients == [recipient])
        let claimed = try await store.pipeline("r").claimQueuedEvents(source: QueuedEventIntake.replayKey, lease: .seconds(60), limit: 10)
        #expect(claimed.count == 1)
        #expect(claimed.first?.replayOf == dead && claimed.first?.caller == "token" && claimed.first?.body == ["text": "hi"])
        #expect(claimed.first?.event.source == "events", "a replay counts under the source that accepted it")
        #expect(try await store.deadLetterCounts() == ["r": 1])

        // An event still queued is accepted, whatever is known of it yet.
        var queued = QueuedEvent(pipeline: "r", source: "events", eventID: "e3", user: "v", time: 30, body: [:], lease: .seconds(60))
        queued.caller = "user:v"
        try await store.enqueue(queued)
        let accepted = try await store.eventStatus(eventID: "e3", pipeline: nil)
        #expect(accepted.map(\.state) == [.accepted] && accepted.first?.caller == "user:v" && accepted.first?.acceptedAt == 30)

        #expect(try await store.pipeline("r").dropDeadLetter(eventID: "e0"))
        #expect(try await store.pipeline("r").dropDeadLetter(eventID: "e0") == false)
        #expect(try await store.deadLetterCounts().isEmpty)
    }
}
