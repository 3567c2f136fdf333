import Foundation
import GRDB
import NIOPosix
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipeSQLite

@Suite struct SQLiteStoreTests {
    /// The per-event reads (tokens, settings) made on one of the server's event loops (routes
    /// and HTTP-fed pipelines) go to a reader's queue: on the calling thread, a read that waits
    /// would hold up every connection of that loop.
    @Test func readsOnAnEventLoopAreMadeOffIt() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let (onLoop, readOnLoop) = try await withTaskExecutorPreference(EventLoopGroupTaskExecutor.singleton) {
            (
                MultiThreadedEventLoopGroup.currentEventLoop != nil,
                try await store.read { _ in MultiThreadedEventLoopGroup.currentEventLoop != nil }
            )
        }
        #expect(onLoop, "the caller runs on an event loop")
        #expect(!readOnLoop, "the read is not made on it")
        try await store.close()
    }

    @Test func registrationsAreIdempotentAndReplaceable() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let alice = DeviceToken(user: "alice", kind: "device", value: "aa11")
        try await store.pipeline("p").register(alice, environment: nil, replace: false)
        try await store.pipeline("p").register(alice, environment: nil, replace: false)
        try await store.pipeline("p").register(DeviceToken(user: "alice", kind: "device", value: "bb22"), environment: nil, replace: false)
        #expect(try await store.pipeline("p").tokens(user: "alice", kind: "device").map(\.value).sorted() == ["aa11", "bb22"])
        // Another kind never overwrites, and `replace` keeps only the newest token of its kind.
        try await store.pipeline("p").register(DeviceToken(user: "alice", kind: "push-to-start", value: "cc33"), environment: nil, replace: true)
        try await store.pipeline("p").register(DeviceToken(user: "alice", kind: "device", value: "dd44"), environment: nil, replace: true)
        #expect(try await store.pipeline("p").tokens(user: "alice", kind: "device").map(\.value) == ["dd44"])
        #expect(try await store.pipeline("p").tokens(user: "alice", kind: "push-to-start").map(\.value) == ["cc33"])
        #expect(try await store.pipeline("other").tokens(user: "alice", kind: "device").isEmpty)
        try await store.close()
    }

    @Test func deadTokenIsKeptWhenReRegisteredAfterTheProviderSawItDead() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let token = DeviceToken(user: "u", kind: "device", value: "ab12")
        try await store.pipeline("p").register(token, environment: nil, replace: false)
        let registeredAt = try #require(try await store.pipeline("p").tokens(user: "u", kind: "device").first?.updatedAt)
        #expect(try await store.pipeline("p").removeToken(kind: "device", token: "ab12", unlessUpdatedAfter: registeredAt - 60) == false)
        #expect(try await store.pipeline("p").tokens(user: "u", kind: "device").count == 1)
        #expect(try await store.pipeline("p").removeToken(kind: "device", token: "ab12", unlessUpdatedAfter: registeredAt + 1) == true)
        #expect(try await store.pipeline("p").tokens(user: "u", kind: "device").isEmpty)
        try await store.close()
    }

    @Test func historyPagesNewestFirst() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        for index in 1...5 {
            try await store.appendHistory(
                HistoryEntry(pipeline: "p", user: "u", eventID: "e\(index)", createdAt: Double(index), record: ["n": .int(Int64(index))])
            )
        }
        let first = try await store.pipeline("p").history(user: "u", limit: 2, before: nil)
        #expect(first.map(\.record) == [["n": 5], ["n": 4]])
        let second = try await store.pipeline("p").history(user: "u", limit: 2, before: first.last?.id)
        #expect(second.map(\.record) == [["n": 3], ["n": 2]])
        #expect(try await store.pipeline("p").history(user: "other", limit: 2, before: nil).isEmpty)
        try await store.close()
    }

    @Test func oldVersionDatabaseIsMigratedKeepingItsData() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("old.sqlite")
        // A database as the first release left it: only the v1 tables, with data.
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteStore.migrator.migrate(queue, upTo: "v1-registrations-settings-state")
            try await queue.write { db in
                try db.execute(
                    sql:
                        "INSERT INTO registrations (pipeline, user_id, token_kind, token, created_at, updated_at) VALUES ('p', 'u', 'device', "
                        + "'ab12', 1, 1)"
                )
                try db.execute(
                    sql: "INSERT INTO stage_state (pipeline, stage, key, value, updated_at) VALUES ('p', 'filters[0]', 'u', '1758474319701', 1)"
                )
            }
            #expect(try await queue.read { db in try db.tableExists("history") } == false)
            try queue.close()
        }
        let store = try SQLiteStore(path: path)
        #expect(try store.appliedMigrations() == SQLiteStore.migrationNames)
        let tokens = try await store.pipeline("p").tokens(user: "u", kind: "device")
        #expect(tokens.map(\.value) == ["ab12"])
        #expect(tokens.first?.scope == "")
        #expect(try await store.pipeline("p").state(stage: "filters[0]", key: "u") == .int(1_758_474_319_701))
        try await store.appendHistory(HistoryEntry(pipeline: "p", user: "u", eventID: "e", createdAt: 2, record: ["ok": true]))
        try await store.close()
    }

    /// Events an earlier version left queued become work items with every field, one each even
    /// when a backend reused an id, and keep their holder and lease.
    @Test func queuedEventsOfAnEarlierVersionMoveOntoTheWorkQueue() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("old.sqlite")
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteStore.migrator.migrate(queue, upTo: "v17-poll-work")
            try await queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO queued_events (pipeline, source, instance, event_id, user_id, time, body, lease_until, caller, replay_of,
                        trace_parent)
                        VALUES ('p', 'http.event', 'gone', 'e1', 'alice', 2.5, '{"text":"nul\\u0000"}', 0, 'token', NULL,
                        '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'),
                               ('p', 'http.event', 'gone', 'e1', NULL, 3, '{}', 0, NULL, NULL, NULL),
                               ('p', 'http.event', 'alive', 'e2', NULL, 4, '{}', 1e12, NULL, NULL, NULL)
                        """
                )
            }
            try queue.close()
        }
        let store = try SQLiteStore(path: path)
        let claimed = try await store.pipeline("p").claimQueuedEvents(source: "http.event", lease: .seconds(60), limit: 10)
        #expect(claimed.map(\.eventID) == ["e1", "e1"], "both of a reused id; the one under a running lease stays with its holder")
        #expect(
            claimed.first?.user == "alice" && claimed.first?.time == 2.5 && claimed.first?.body == ["text": "nul\0"]
                && claimed.first?.caller == "token" && claimed.first?.traceParent == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        )
        #expect(try await store.eventRecords(eventID: "e2", pipeline: nil).queued.map(\.instance) == ["alive"])
        #expect(try await store.database.read { db in try db.tableExists("queued_events") } == false)
        try await store.close()
    }

    @Test func historyOfAnEarlierVersionSurvivesTheMoveIntoDeliveries() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("v3.sqlite")
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteStore.migrator.migrate(queue, upTo: "v3-token-scope-environment")
            try await queue.write { db in
                for index in 1...3 {
                    try db.execute(
                        sql: "INSERT INTO history (pipeline, user_id, event_id, created_at, record) VALUES ('p', 'u', ?, ?, ?)",
                        arguments: ["e\(index)", Double(index), "{\"n\":\(index)}"]
                    )
                }
                try db.execute(
                    sql: """
                        INSERT INTO deliveries (pipeline, event_id, user_id, token_kind, token, outcome, attempts, created_at)
                        VALUES ('p', 'e3', 'u', 'device', 'ab12', 'delivered', 1, 3)
                        """
                )
            }
            try queue.close()
        }
        let store = try SQLiteStore(path: path)
        #expect(try await store.pipeline("p").history(user: "u", limit: 10, before: nil).map(\.record) == [["n": 3], ["n": 2], ["n": 1]])
        #expect(try await store.pipeline("p").lastDelivery(user: "u")?.delivery.token == "ab12", "migrated history rows are not deliveries")
        try await store.close()
    }

    @Test func aDeliveredNotificationCarriesItsHistoryRecord() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        // Two devices of one user, one of them dead: one history entry, kept with a delivered row.
        try await store.pipeline("p").recordOutcome(
            deliveries: [
                .of("e1", user: "u", token: "aa", outcome: .dropToken, at: 1),
                .of("e1", user: "u", token: "bb", providerID: "id-bb", at: 1, history: ["title": "hi"]),
                .of("e1", user: "u", token: "cc", providerID: "id-cc", at: 1),
            ],
            state: []
        )
        let history = try await store.pipeline("p").history(user: "u", limit: 10, before: nil)
        #expect(history.map(\.record) == [["title": "hi"]])
        #expect(history.first?.eventID == "e1")
        #expect(try await store.pipeline("p").lastDelivery(user: "u")?.delivery.providerID == "id-cc")
        try await store.close()
    }
}

extension SQLiteStoreTests {
    /// A batch is committed by one of the tasks it gathers; that task being cancelled (a
    /// stopping pipeline past its drain timeout) must not lose the outcomes in it.
    @Test func outcomesAreCommittedEvenFromACancelledTask() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let recording = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await store.pipeline("p").recordOutcome(
                deliveries: [.of("e", user: "u", token: "ab", at: 1, history: ["n": 1])],
                state: [StateWrite(stage: "filters[0]", key: "u", value: 5)]
            )
        }
        try await recording.value
        #expect(try await store.pipeline("p").history(user: "u", limit: 5, before: nil).map(\.record) == [["n": 1]])
        #expect(try await store.pipeline("p").state(stage: "filters[0]", key: "u") == 5)
        try await store.close()
    }
}

/// Accepted events wait in the store until processed; a later process claims what is left.
@Suite struct SQLiteStoreQueuedEventTests {
    @Test func eventsLeftByAnEarlierProcessAreClaimedOnceAndInOrder() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        func queued(_ id: String, instance: String, source: String = "sources[0]") -> QueuedEvent {
            QueuedEvent(
                pipeline: "p",
                source: source,
                instance: instance,
                eventID: id,
                user: "u-\(id)",
                time: 1_700_000_000.5,
                body: ["id": .string(id)]
            )
        }
        try await store.enqueue(queued("e1", instance: "earlier"))
        // In flight here for the whole test, however slowly a loaded machine runs it.
        var own = queued("own", instance: QueuedEvent.thisProcess)
        own.lease = .seconds(600)
        try await store.enqueue(own)
        try await store.enqueue(queued("e2", instance: "earlier"))
        try await store.enqueue(queued("other-source", instance: "earlier", source: "sources[1]"))

        let beforeClaim = Date().timeIntervalSince1970
        let claimed = try await store.pipeline("p").claimQueuedEvents(source: "sources[0]", lease: .seconds(600), limit: 10)
        #expect(claimed.map(\.eventID) == ["e1", "e2"], "this process's own events are in flight already")
        #expect(
            claimed.first.map { claimed in
                var event = claimed
                event.lease = .seconds(0)
                event.key = ""
                return event
            }
                == {
                    var event = queued("e1", instance: QueuedEvent.thisProcess)
                    event.key = ""
                    return event
                }()
        )
        #expect(claimed.first?.lease == .seconds(600), "claimed with a lease")
        let leases = try await store.database.read { db in
            try Double.fetchAll(db, sql: "SELECT lease_until FROM work WHERE key = ?", arguments: [claimed[0].key])
        }
        #expect(leases.allSatisfy { $0 >= beforeClaim + 600 }, "stored with the lease: \(leases)")
        #expect(claimed.first?.event.time == Date(timeIntervalSince1970: 1_700_000_000.5), "the original acceptance time")
        #expect(try await store.pipeline("p").claimQueuedEvents(source: "sources[0]", lease: .seconds(600), limit: 10).isEmpty, "claimed once")

        var again = queued("e2", instance: QueuedEvent.thisProcess)
        again.lease = .seconds(600)
        try await store.enqueue(again)
        for event in claimed { try await store.pipeline("p").dequeue(source: "sources[0]", key: event.key) }
        let left = try await store.database.read { db in
            try String.fetchAll(db, sql: "SELECT json_extract(payload, '$.event_id') FROM work ORDER BY id")
        }
        #expect(left == ["own", "other-source", "e2"], "one item per dequeue, even when a backend reuses an id")
        try await store.close()
    }

    /// A SQLite state has one daemon: the one that opens it with its lock takes over at once
    /// what an earlier process left held, instead of waiting out a lease whose holder is gone.
    @Test func theDaemonOpeningTheFileTakesOverWhatAnEarlierProcessHeld() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var store = try SQLiteStore(path: directory.file("state.sqlite"))
        var held = QueuedEvent(
            pipeline: "p",
            source: "events",
            instance: "a-killed-daemon",
            eventID: "e1",
            user: "u",
            time: 1,
            body: [:],
            lease: .seconds(600)
        )
        held.traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        try await store.enqueue(held)
        #expect(try await store.pipeline("p").claimQueuedEvents(source: "events", lease: .seconds(30), limit: 10).isEmpty, "under its holder's lease")
        try await store.close()
        store = try SQLiteStore(path: directory.file("state.sqlite"))
        #expect(
            try await store.pipeline("p").claimQueuedEvents(source: "events", lease: .seconds(30), limit: 10).isEmpty,
            "a command opens it without taking over"
        )
        try await store.close()
        store = try SQLiteStore(path: directory.file("state.sqlite"), takingOverQueuedEvents: true)
        let claimed = try await store.pipeline("p").claimQueuedEvents(source: "events", lease: .seconds(30), limit: 10)
        #expect(claimed.map(\.eventID) == ["e1"] && claimed.first?.traceParent == held.traceParent)
        try await store.close()
    }

    /// New users fall due evenly in the order of their ids, and the file keeps them in that
    /// order: a claim of the next due users rewrites a page or two instead of one page per user,
    /// and their watermarks (keyed by user) sit on neighbouring pages. A user already scheduled
    /// keeps its time.
    @Test func newUsersFallDueEvenlyInTheOrderOfTheirIds() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        for user in (1...60).reversed() {
            try await store.pipeline("p").register(
                DeviceToken(user: "\(user)", kind: "device", value: String(format: "%04x", user)),
                environment: nil,
                replace: false
            )
        }
        try await store.pipeline("p").register(DeviceToken(user: "7", kind: "device", value: "ff07"), environment: nil, replace: false)
        let start = Date().timeIntervalSince1970
        let work = store.pipeline("p").work
        let registered = { try await store.pipeline("p").tokens(user: nil, kind: "device").map(\.user) }
        try await work.schedule("poll:s", every: .seconds(30)) { try await registered() }
        func schedule(orderedBy order: String) async throws -> [String] {
            try await store.database.read { db in try String.fetchAll(db, sql: "SELECT key FROM work WHERE kind = 'poll:s' ORDER BY \(order)") }
        }
        let byDue = try await schedule(orderedBy: "due_at")
        #expect(byDue == (1...60).map { "\($0)" }.sorted(), "once each, in the order of their ids (as text)")
        #expect(try await schedule(orderedBy: "rowid") == byDue)
        let times = try await store.database.read { db in
            try Double.fetchAll(db, sql: "SELECT due_at FROM work WHERE kind = 'poll:s' ORDER BY due_at")
        }
        #expect(abs(times[0] - start) < 1, "the first is due now")
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(gaps.allSatisfy { abs($0 - 0.4) < 0.001 }, "60 users evenly over 80% of 30 s: one every 0.4 s")
        try await store.pipeline("p").register(DeviceToken(user: "61", kind: "device", value: "ff61"), environment: nil, replace: false)
        try await work.schedule("poll:s", every: .seconds(30)) { try await registered() }
        #expect(try await schedule(orderedBy: "rowid") == byDue, "synced once per period")
        try await work.complete("schedule-synced", keys: ["poll:s"])
        try await work.schedule("poll:s", every: .seconds(30)) { try await registered() }
        #expect(try await schedule(orderedBy: "rowid") == byDue + ["61"], "scheduled users are left as they are")
        try await store.close()
    }
}
