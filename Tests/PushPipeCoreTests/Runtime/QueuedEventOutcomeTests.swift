import Foundation
import Logging
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipePostgres
@testable import PushPipeSQLite

/// An accepted event leaves its queue in the commit of its outcome, not in a commit of its own
/// after it: one write per event fewer, and no moment in which its outcome is final while it
/// still waits to be sent again. On both stores (PostgreSQL's outcome batch is one statement).
@Suite(.timeLimit(.minutes(1))) struct QueuedEventOutcomeTests {
    typealias Backend = EventHoldTests.Backend

    /// Ana's event as an `http.event` source accepted it.
    static var accepted: QueuedEvent {
        var event = QueuedEvent(
            pipeline: "scripted",
            source: "http.event",
            eventID: "e1",
            user: "ana",
            time: Date().timeIntervalSince1970,
            body: ["text": "hi"],
            lease: .seconds(60)
        )
        event.caller = "backend"
        return event
    }

    /// What the processor does with an event an `http.event` source accepted, with no
    /// completion called (the process "dies" right after): whether it is still queued.
    static func processAccepted(
        _ event: (inout QueuedEvent) -> Void = { _ in },
        on backend: Backend,
        filters: String = "  []",
        refusingDeliveries: Bool = false,
        check: (EventReport, _ stillQueued: [QueuedEvent], any Store) async throws -> Void
    ) async throws {
        try await EventHoldTests.withPipeline(backend, filters: filters) { definition, _, store in
            try await store.pipeline("scripted").register(
                DeviceToken(user: "ana", kind: "device", value: "tok-ana"),
                environment: nil,
                replace: false
            )
            if refusingDeliveries { try await refuseDeliveries(store) }
            var accepted = Self.accepted
            event(&accepted)
            try await store.enqueue(accepted)
            let report = await EventProcessor(definition: definition, store: store, logger: Logger(label: "scripted"), mode: .live)
                .process(accepted.event)
            try await check(report, try await store.eventRecords(eventID: "e1", pipeline: "scripted").queued, store)
        }
    }

    @Test(arguments: Backend.allCases)
    func aDeliveredEventLeavesItsQueueWithItsOutcome(_ backend: Backend) async throws {
        try await Self.processAccepted(on: backend) { report, queued, store in
            #expect(report.status == .delivered && report.leftQueue, "\(report)")
            #expect(queued.isEmpty, "removed in the commit of its outcome: \(queued.map(\.key))")
            let record = try await store.eventRecords(eventID: "e1", pipeline: "scripted").records.first
            #expect(record?.state == .delivered)
        }
    }

    @Test(arguments: Backend.allCases)
    func aBroadcastAndAnEventWithNobodyToReachLeaveTheirQueueToo(_ backend: Backend) async throws {
        try await Self.processAccepted({ $0.user = nil }, on: backend) { report, queued, _ in
            #expect(report.status == .delivered && report.leftQueue, "\(report)")
            #expect(queued.isEmpty)
        }
        try await Self.processAccepted({ $0.user = "nobody" }, on: backend) { report, queued, store in
            #expect(report.status == .noRecipients && report.leftQueue, "\(report)")
            #expect(queued.isEmpty)
            let record = try await store.eventRecords(eventID: "e1", pipeline: "scripted").records.first
            #expect(record?.state == .dropped)
        }
    }

    /// The store refuses the outcome (its deliveries, a constraint): the removal, refused with
    /// it, waits for the event's dead letter and follows it; never gone without a record.
    @Test(arguments: Backend.allCases)
    func anEventWhoseOutcomeTheStoreRefusesLeavesItsQueueAsADeadLetter(_ backend: Backend) async throws {
        try await Self.processAccepted(
            on: backend,
            refusingDeliveries: true
        ) { report, queued, store in
            #expect(report.leftQueue, "\(report)")
            let record = try await store.eventRecords(eventID: "e1", pipeline: "scripted").records.first
            #expect(record?.state == .deadLetter && record?.code == "store_refused", "\(String(describing: record))")
            #expect(queued.isEmpty)
        }
    }

    /// Makes `store` refuse every delivery row, as a constraint does.
    static func refuseDeliveries(_ store: any Store) async throws {
        if let sqlite = store as? SQLiteStore {
            try await sqlite.database.write { db in
                try db.execute(sql: "CREATE TRIGGER refuse BEFORE INSERT ON deliveries BEGIN SELECT RAISE(ABORT, 'refused'); END")
            }
        } else if let postgres = store as? PostgresStore {
            _ = try await postgres.connections.rows("ALTER TABLE deliveries ADD CONSTRAINT refuse CHECK (false)")
        }
    }
}
