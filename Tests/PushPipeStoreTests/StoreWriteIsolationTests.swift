import Dispatch
import Foundation
import Logging
import PostgresNIO
import PushPipePostgresTesting
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipePostgres
@testable import PushPipeSQLite

/// On real stores: a provider's answer with a NUL would make PostgreSQL refuse a delivery's
/// row (SQLSTATE 22P05) and fail every write of its group commit, and SQLite would keep it and
/// cut every read at it. Every string bound is made storable, and a write the store still
/// refuses fails alone, told as a `StoreDataError` with the store's code.
@Suite struct StoreWriteIsolationTests {
    static let logger = Logger(label: "store-write-isolation")

    @Test func sqliteStoresTextWithNULAsItsReplacement() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        try await withCleanup({ try await Self.textWithNUL(store) }, cleanup: { try? await store.close() })
    }

    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func postgresStoresTextWithNULAsItsReplacement() async throws {
        let store = try await PostgresStore(location: try await TestStores.freshPostgresDatabase(), logger: Self.logger)
        try await withCleanup({ try await Self.textWithNUL(store) }, cleanup: { try? await store.close() })
    }

    @Test func sqliteCommitsTheNeighboursOfARefusedWrite() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        try await withCleanup(
            {
                // The writer's queue is held, so the first commit waits behind it while a batch forms.
                let writer = DispatchSemaphore(value: 0)
                store.database.asyncWriteWithoutTransaction { _ in writer.wait() }
                try await Self.neighboursOfARefusedWrite(store, outcomes: store.outcomes, refusal: "SQLITE_CONSTRAINT (1299)") { writer.signal() }
            },
            cleanup: { try? await store.close() }
        )
    }

    /// With `tokensConfirmed`, each user's token is confirmed by an earlier delivery first: the
    /// batch then marks nothing and holds outcomes alone, which PostgreSQL commits as one
    /// statement without a transaction; without, it takes the transaction.
    @Test(
        .enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"),
        arguments: [false, true]
    )
    func postgresCommitsTheNeighboursOfARefusedWrite(tokensConfirmed: Bool) async throws {
        let location = try await TestStores.freshPostgresDatabase()
        let store = try await PostgresStore(location: location, logger: Self.logger)
        if tokensConfirmed {
            for id in Self.batch {
                try await store.pipeline("p").recordOutcome(
                    deliveries: [.of("first-\(id)", user: "user-\(id)", token: "t", at: Date().timeIntervalSince1970)],
                    state: []
                )
            }
        }
        let locker = PostgresClient(configuration: location.clientConfiguration, backgroundLogger: Self.logger)
        try await withCleanup(
            {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await locker.run() }
                    // A lock on the table holds the first commit while a batch forms.
                    let locked = ObservedState(false)
                    let unlock = Gate()
                    group.addTask {
                        try await locker.withTransaction(logger: Self.logger) { connection in
                            try await connection.query("LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE", logger: Self.logger)
                            locked.update { $0 = true }
                            await unlock.wait()
                        }
                    }
                    try await locked.wait(timeout: 10, { $0 ? () : nil }, failure: { _ in WaitTimedOut("the table lock") })
                    // NOT NULL of `created_at`: a NaN time is written as null.
                    try await Self.neighboursOfARefusedWrite(store, outcomes: store.outcomes, refusal: "23502", earlier: tokensConfirmed) {
                        unlock.open()
                    }
                    group.cancelAll()
                }
            },
            cleanup: { try? await store.close() }
        )
    }

    /// Every kind of row the stores write, each string with a NUL: each is stored with the
    /// replacement character instead (read here by that form), JSON values keep theirs
    /// (escaped in their text), and a reason is cut to `StoredText.longestFreeText`.
    static func textWithNUL(_ store: any Store) async throws {
        let now = Date().timeIntervalSince1970
        try await store.pipeline("p").register(DeviceToken(user: "a\0b", kind: "device", value: "t\0"), environment: nil, replace: false)
        #expect(try await store.pipeline("p").tokens(user: "a\u{FFFD}b", kind: "device").map(\.value) == ["t\u{FFFD}"])

        var delivery = DeliveryRow.of(
            "e\0",
            user: "a\0b",
            token: "t\0",
            reason: "bad\0answer " + String(repeating: "x", count: 5000),
            providerID: "id\0",
            at: now
        )
        // A payload serialized elsewhere, with a byte that is not UTF-8.
        delivery.history = .serialized(Data(#"{"x":"?"}"#.utf8.map { $0 == UInt8(ascii: "?") ? 0xFF : $0 }))
        let record = EventRecord(pipeline: "p", eventID: "e\0", state: .delivered, user: "a\0b", reason: "why\0", acceptedAt: now, updatedAt: now)
        try await store.pipeline("p").recordOutcome(
            deliveries: [delivery],
            state: [StateWrite(stage: "s", key: "k\0", value: .string("v\0"))],
            events: [record]
        )

        let last = try #require(try await store.pipeline("p").lastDelivery(user: "a\u{FFFD}b"))
        #expect(last.eventID == "e\u{FFFD}")
        #expect(last.delivery.token == "t\u{FFFD}")
        #expect(last.delivery.providerID == "id\u{FFFD}")
        #expect(last.delivery.reason?.hasPrefix("bad\u{FFFD}answer xxx") == true)
        #expect(last.delivery.reason?.unicodeScalars.count == StoredText.longestFreeText + 1, "cut, and marked with an ellipsis")
        #expect(try await store.pipeline("p").history(user: "a\u{FFFD}b", limit: 10, before: nil).map(\.record) == [["x": "\u{FFFD}"]])
        #expect(try await store.pipeline("p").state(stage: "s", key: "k\u{FFFD}") == .string("v\0"))
        let records = try await store.eventRecords(eventID: "e\u{FFFD}", pipeline: "p").records
        #expect(records.map(\.eventID) == ["e\u{FFFD}"])
        #expect(records.first?.reason == "why\0", "the record is JSON text: its NUL is escaped and kept")

        try await store.enqueue(QueuedEvent(pipeline: "p", source: "s", eventID: "q\0", user: "a\0b", time: now, body: ["text": "nul\0"]))
        let queued = try await store.eventRecords(eventID: "q\u{FFFD}", pipeline: "p").queued
        #expect(queued.map(\.user) == ["a\0b"], "the item is JSON text: its NUL is escaped and kept")
        #expect(queued.first?.body == ["text": "nul\0"])
        #expect(try await store.eventRecords(eventID: "q\0", pipeline: "p").queued.count == 1, "found by the id as sent")
        try await store.pipeline("p").dequeue(source: "s", key: try #require(queued.first?.key))
        #expect(try await store.eventRecords(eventID: "q\u{FFFD}", pipeline: "p").queued.isEmpty, "a dequeue finds what the enqueue stored")
    }

    /// The writes of `neighboursOfARefusedWrite`, by id (`user-<id>`).
    static let batch = ["held", "e1", "e2", "e3", "poison"]

    /// A commit is held (by `release`'s counterpart), a batch of four forms behind it with one
    /// write the store refuses (a NaN time), and the hold ends: that write fails with the
    /// store's code, the other three are committed.
    static func neighboursOfARefusedWrite(
        _ store: any Store,
        outcomes: GroupCommit<OutcomeWrite>,
        refusal: String,
        earlier: Bool = false,
        release: () -> Void
    ) async throws {
        @Sendable func write(_ id: String, at time: Double = Date().timeIntervalSince1970) async throws {
            let delivery = DeliveryRow.of(id, user: "user-\(id)", token: "t", at: time)
            try await store.pipeline("p").recordOutcome(deliveries: [delivery], state: [])
        }
        let held = Task { try await write("held") }
        await outcomes.pendingWritesReach(0)
        let neighbours = ["e1", "e2", "e3"].map { id in Task { try await write(id) } }
        let poison = Task { try await write("poison", at: .nan) }
        await outcomes.pendingWritesReach(4)
        release()
        try await held.value
        for neighbour in neighbours {
            await #expect(throws: Never.self, "a neighbour of the refused write is committed") { try await neighbour.value }
        }
        do {
            try await poison.value
            Issue.record("the store took a NaN time")
        } catch let error as StoreDataError {
            #expect(error.code == refusal, "\(error)")
        }
        for id in ["held", "e1", "e2", "e3"] {
            #expect(try await store.pipeline("p").lastDelivery(user: "user-\(id)")?.eventID == id)
        }
        #expect(try await store.pipeline("p").lastDelivery(user: "user-poison")?.eventID == (earlier ? "first-poison" : nil))
    }
}
