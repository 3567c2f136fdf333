import Logging
import PostgresNIO
import PushPipePostgresTesting
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipePostgres
@testable import PushPipeSQLite

/// An outcome the store refuses is not retried for ever, which would keep its event queued,
/// block its worker and send it again at each restart. On real stores, each refusing one
/// recipient's delivery row (a constraint): the event it belongs to becomes a dead letter
/// with the store's reason, the event recorded with it is not concerned, and the next event
/// is delivered. A batch that never returns fails the test at its time limit.
@Suite(.timeLimit(.minutes(1))) struct EventProcessorRefusedOutcomeTests {
    static let renderer = "renderer: {type: json.template, payload: {n: {$from: n}}}"

    @Test func sqliteRefusingAnOutcomeMakesItsEventADeadLetter() async throws {
        try await ScriptedPipeline.with(Self.renderer) { pipeline in
            try await pipeline.store.database.write { db in
                try db.execute(
                    sql: """
                        CREATE TRIGGER refuse_poison BEFORE INSERT ON deliveries WHEN NEW.user_id = 'poison'
                        BEGIN SELECT RAISE(ABORT, 'poison is refused'); END
                        """
                )
            }
            try await Self.refusedOutcome(pipeline, store: pipeline.store, code: "SQLITE_CONSTRAINT (1811)")
        }
    }

    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func postgresRefusingAnOutcomeMakesItsEventADeadLetter() async throws {
        try await ScriptedPipeline.with(Self.renderer) { pipeline in
            let store = try await PostgresStore(location: try await TestStores.freshPostgresDatabase(), logger: Logger(label: "test"))
            try await withCleanup(
                {
                    _ = try await store.connections.rows("ALTER TABLE deliveries ADD CONSTRAINT refuse_poison CHECK (user_id <> 'poison')")
                    try await Self.refusedOutcome(pipeline, store: store, code: "23514")
                },
                cleanup: { try? await store.close() }
            )
        }
    }

    /// The provider's answer, the event's user or its body may hold a NUL (JSON allows it),
    /// which PostgreSQL refuses (22P05), and the outcome would be retried for ever. Stored with
    /// the replacement character, the event is delivered and recorded, and so is the next.
    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func postgresRecordsAnEventWhoseUserAndBodyHoldNUL() async throws {
        try await ScriptedPipeline.with(Self.renderer) { pipeline in
            let store = try await PostgresStore(location: try await TestStores.freshPostgresDatabase(), logger: Logger(label: "test"))
            try await withCleanup(
                {
                    let name = pipeline.definition.name
                    try await store.pipeline(name).register(DeviceToken(user: "a\0b", kind: "device", value: "t1"), environment: nil, replace: false)
                    let processor = EventProcessor(
                        definition: pipeline.definition,
                        store: store,
                        logger: Logger(label: "test"),
                        mode: .live,
                        output: OutputSink { _ in }
                    )
                    let event = pipeline.event(user: "a\0b", ["n": 1, "text": "nul\0"])
                    #expect(await processor.process(event).status == .delivered)
                    let record = try await store.eventRecords(eventID: event.id, pipeline: name).records.first
                    #expect(record?.state == .delivered)
                    #expect(try await store.pipeline(name).lastDelivery(user: "a\u{FFFD}b")?.eventID == event.id)
                    #expect(await processor.process(pipeline.event(user: "a\0b", ["n": 2])).status == .delivered, "the worker goes on")
                    #expect(pipeline.transport.sends == ["t1", "t1"])
                },
                cleanup: { try? await store.close() }
            )
        }
    }

    /// Two events in one batch, so their outcomes share a write the store refuses.
    static func refusedOutcome(_ pipeline: ScriptedPipeline, store: any Store, code: String) async throws {
        let name = pipeline.definition.name
        for user in ["poison", "alice"] {
            try await store.pipeline(name).register(DeviceToken(user: user, kind: "device", value: "t-\(user)"), environment: nil, replace: false)
        }
        let processor = EventProcessor(
            definition: pipeline.definition,
            store: store,
            logger: Logger(label: "test"),
            mode: .live,
            output: OutputSink { _ in }
        )
        let poison = pipeline.event(user: "poison", ["n": 1])
        let alice = pipeline.event(user: "alice", ["n": 2])
        let started = await processor.start([poison, alice])
        #expect(started.reports.count == 2)

        let letter = try #require(try await store.eventRecords(eventID: poison.id, pipeline: name).records.first)
        #expect(letter.state == .deadLetter)
        #expect(letter.code == "store_refused")
        #expect(letter.reason?.contains(code) == true, "\(letter.reason ?? "no reason")")
        #expect(letter.input?.body == ["n": 1], "replayable")
        #expect(try await store.deadLetters(pipeline: name, since: nil, limit: 10).map(\.eventID) == [poison.id])

        #expect(try await store.eventRecords(eventID: alice.id, pipeline: name).records.first?.state == .delivered)
        #expect(try await store.pipeline(name).lastDelivery(user: "alice")?.eventID == alice.id)
        // Not blocked: the next event goes out and is recorded.
        let next = pipeline.event(user: "alice", ["n": 3])
        #expect(await processor.process(next).status == .delivered)
        #expect(try await store.pipeline(name).lastDelivery(user: "alice")?.eventID == next.id)
    }
}
