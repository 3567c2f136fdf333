import Foundation
import GRDB
import Logging
import PostgresNIO
import PushPipePostgresTesting
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipePostgres
@testable import PushPipeSQLite

/// The leased-work primitive (`WorkQueue`), the same contract on each backend: what
/// is due, who holds it, what a retry, a release, a lapsed lease and a saved cursor leave.
@Suite struct WorkQueueContractTests {
    static let logger = StoreBackend.logger

    static func item(_ key: String, kind: String = "job", _ n: Int64 = 0) -> WorkItem {
        WorkItem(kind: kind, key: key, payload: ["n": .int(n)], createdAt: Date().timeIntervalSince1970)
    }

    @Test(arguments: StoreBackend.available)
    func aClaimTakesDueItemsNobodyHoldsOldestFirst(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let work = store.pipeline("p").work
            try await work.add([Self.item("a", 1), Self.item("b", 2)])
            try await work.add([Self.item("later")], after: .seconds(3600))
            try await work.add([Self.item("a", 99)])
            try await store.pipeline("other").work.add([Self.item("elsewhere")])
            try await work.add([Self.item("other-kind", kind: "digest")])

            let first = try await work.claim("job", limit: 1, lease: .seconds(600))
            #expect(first.map(\.key) == ["a"] && first.first?.payload == ["n": 1], "oldest first; a key that waits is not added again")
            #expect(try await work.claim("job", limit: 10, lease: .seconds(600)).map(\.key) == ["b"], "held ones and ones not due yet stay")
            #expect(try await work.claim("job", limit: 10, lease: .seconds(600)).isEmpty)
            #expect(try await store.pipeline("other").work.claim("job", limit: 10, lease: .seconds(600)).map(\.key) == ["elsewhere"])
            #expect(try await work.claim("digest", limit: 10, lease: .seconds(600)).map(\.key) == ["other-kind"])
        }
    }

    @Test(arguments: StoreBackend.available)
    func aLapsedLeaseIsClaimedAgainAndARenewedOneIsNot(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let work = store.pipeline("p").work
            try await work.add([Self.item("lapses"), Self.item("renewed")])
            // Its daemon died: the lease ran out at once.
            let held = try await work.claim("job", limit: 10, lease: .seconds(-1))
            #expect(held.count == 2)
            try await work.renew("job", keys: Set(held.filter { $0.key == "renewed" }.map(\.key)), lease: .seconds(600))
            #expect(try await work.claim("job", limit: 10, lease: .seconds(600)).map(\.key) == ["lapses"])
        }
    }

    @Test(arguments: StoreBackend.available)
    func aRetryCountsAnAttemptAndWaitsAReleaseDoesNeither(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let work = store.pipeline("p").work
            try await work.add([Self.item("x")])
            var claimed = try await work.claim("job", limit: 10, lease: .seconds(600))
            try await work.retry("job", keys: Set(claimed.map(\.key)), after: .seconds(-1))
            claimed = try await work.claim("job", limit: 10, lease: .seconds(600))
            #expect(claimed.map(\.attempts) == [1], "due again at once, its attempt counted")
            try await work.retry("job", keys: Set(claimed.map(\.key)), after: .seconds(3600))
            #expect(try await work.claim("job", limit: 10, lease: .seconds(600)).isEmpty, "not due before its backoff")

            try await work.add([Self.item("y")])
            claimed = try await work.claim("job", limit: 10, lease: .seconds(3600))
            try await work.release("job", keys: Set(claimed.map(\.key)))
            claimed = try await work.claim("job", limit: 10, lease: .seconds(600))
            #expect(claimed.map(\.key) == ["y"] && claimed.first?.attempts == 0, "let go of: due as it was, no attempt counted")
            try await work.complete("job", keys: Set(claimed.map(\.key)))
            try await work.release("job", keys: Set(claimed.map(\.key)))
            #expect(try await work.claim("job", limit: 10, lease: .seconds(600)).isEmpty, "completed: gone")
        }
    }

    /// A daemon whose lease ran out, and whose item another daemon took, changes nothing of it.
    @Test(arguments: StoreBackend.available)
    func onlyTheHolderChangesAnItem(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let work = store.pipeline("p").work
            try await work.add([Self.item("taken")])
            let mine = try await work.claim("job", limit: 10, lease: .seconds(-1))
            try await Self.execute("UPDATE work SET owner = 'another-daemon' WHERE key = 'taken'", on: store)
            try await work.complete("job", keys: Set(mine.map(\.key)))
            try await work.retry("job", keys: Set(mine.map(\.key)), after: .seconds(3600))
            let again = try await work.claim("job", limit: 10, lease: .seconds(600))
            #expect(
                again.map(\.key) == ["taken"] && again.first?.attempts == 0,
                "neither completed nor retried by a daemon that no longer holds it"
            )
            // Held by the other daemon now: this one neither lets it go nor shortens its lease.
            try await Self.execute("UPDATE work SET owner = 'another-daemon' WHERE key = 'taken'", on: store)
            try await work.release("job", keys: Set(again.map(\.key)))
            try await work.renew("job", keys: Set(again.map(\.key)), lease: .seconds(-1))
            #expect(try await work.claim("job", limit: 10, lease: .seconds(600)).isEmpty, "still the other daemon's, under its lease")
        }
    }

    /// A long item's progress outlives its daemon: the next claim goes on from the cursor the
    /// outcome of its last step saved.
    @Test(arguments: StoreBackend.available)
    func theCursorOutlivesTheLease(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let work = store.pipeline("p").work
            try await work.add([Self.item("long")])
            var claimed = try #require(try await work.claim("job", limit: 1, lease: .seconds(-1)).first)
            #expect(claimed.cursor == nil)
            claimed.cursor = "user-00042"
            try await store.pipeline("p").recordOutcome(deliveries: [], state: [], events: [], webhooks: [], finishing: [], progress: [claimed])
            let resumed = try #require(try await work.claim("job", limit: 1, lease: .seconds(600)).first)
            #expect(resumed.id == claimed.id && resumed.cursor == "user-00042" && resumed.payload == claimed.payload)
        }
    }

    /// A cursor saved with an outcome (a broadcast's page) is in that outcome's commit: the item
    /// is added never due and held by nobody, or its cursor and time replaced unless another
    /// daemon holds it, and an outcome the store refuses saves none of it.
    @Test(arguments: StoreBackend.available)
    func aCursorSavedWithAnOutcomeIsInItsCommit(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let pipeline = store.pipeline("p")
            func saving(_ cursor: String, at time: Double, deliveries: [DeliveryRow] = []) async throws {
                try await pipeline.recordOutcome(
                    deliveries: deliveries,
                    state: [],
                    events: [EventRecord(pipeline: "p", eventID: "e", state: .processing, acceptedAt: 1, updatedAt: time)],
                    webhooks: [],
                    finishing: [],
                    progress: [WorkItem(kind: "job", key: "e", payload: .null, createdAt: time, cursor: cursor)]
                )
            }
            #expect(try await pipeline.work.item("job", key: "e") == nil)
            try await saving("user-1", at: 100)
            var item = try #require(try await pipeline.work.item("job", key: "e"))
            #expect(item.cursor == "user-1" && item.createdAt == 100)
            #expect(try await pipeline.work.claim("job", limit: 10, lease: .seconds(600)).isEmpty, "never due, held by nobody")
            try await saving("user-2", at: 200)
            item = try #require(try await pipeline.work.item("job", key: "e"))
            #expect(item.cursor == "user-2" && item.createdAt == 200, "the cursor and its time replaced: \(item)")
            try await Self.execute("UPDATE work SET owner = 'another-daemon' WHERE key = 'e'", on: store)
            try await saving("theirs", at: 250)
            #expect(try await pipeline.work.item("job", key: "e")?.cursor == "user-2", "another daemon's item is not changed")
            try await Self.execute("UPDATE work SET owner = NULL WHERE key = 'e'", on: store)

            // A delivery row the database refuses: the page's commit fails whole, cursor included.
            if let sqlite = store as? SQLiteStore {
                try await sqlite.database.write { db in
                    try db.execute(sql: "CREATE TRIGGER refuse BEFORE INSERT ON deliveries BEGIN SELECT RAISE(ABORT, 'refused'); END")
                }
            } else if let postgres = store as? PostgresStore {
                _ = try await postgres.connections.rows("ALTER TABLE deliveries ADD CONSTRAINT refuse CHECK (false)")
            }
            let row = DeliveryRow.of("e", user: "ana", token: "t", outcome: .delivered, providerID: nil, at: 300, history: nil)
            await #expect(throws: (any Error).self) { try await saving("user-3", at: 300, deliveries: [row]) }
            #expect(try await pipeline.work.item("job", key: "e")?.cursor == "user-2")
            #expect(try await store.eventRecords(eventID: "e", pipeline: "p").records.first?.updatedAt == 250)
        }
    }

    /// The items a claim chose get their groups then, and keep them; a group comes whole
    /// whatever the limit, never joined by items added later.
    @Test(arguments: StoreBackend.available)
    func aGroupIsClaimedWhole(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let work = store.pipeline("p").work
            try await work.add((1...2).map { Self.item("k\($0)") })
            let first = try await work.claim("job", limit: 2, lease: .seconds(-1)) { fresh in [("g1", fresh.map(\.id))] }
            #expect(first.map(\.key) == ["k1", "k2"] && first.allSatisfy { $0.group == "g1" }, "\(first)")
            // Due after the lapsed group (a claimed item falls due again when its lease ends).
            try await work.add([Self.item("k3"), Self.item("k4")])
            let again = try await work.claim("job", limit: 1, lease: .seconds(600)) { fresh in [("g2", fresh.map(\.id))] }
            #expect(
                again.map(\.key) == ["k1", "k2"] && again.allSatisfy { $0.group == "g1" },
                "the same group, whole though the limit is 1: \(again)"
            )
            let rest = try await work.claim("job", limit: 10, lease: .seconds(600)) { fresh in [("g2", fresh.map(\.id))] }
            #expect(rest.map(\.key) == ["k3", "k4"] && rest.allSatisfy { $0.group == "g2" }, "\(rest)")
        }
    }

    @Test(arguments: StoreBackend.available)
    func pruningRemovesWhatWaitedTooLong(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let work = store.pipeline("p").work
            try await work.add([
                WorkItem(kind: "job", key: "old", payload: [:], createdAt: 1), WorkItem(kind: "job", key: "new", payload: [:], createdAt: 3),
            ])
            try await work.add([WorkItem(kind: "digest", key: "old", payload: [:], createdAt: 1)])
            #expect(try await work.prune("job", createdBefore: 2, limit: 10) == 1)
            #expect(try await work.claim("job", limit: 10, lease: .seconds(600)).map(\.key) == ["new"])
            #expect(try await work.claim("digest", limit: 10, lease: .seconds(600)).map(\.key) == ["old"], "another kind is not touched")
        }
    }

    /// Taken keys are locks every daemon respects until their lease runs out; only their holder
    /// renews or lets go of them; they are never claimed as work, and forgetting lapsed ones
    /// leaves live ones.
    @Test(arguments: StoreBackend.available)
    func takenKeysAreLocksThatLapse(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let work = store.pipeline("p").work
            #expect(try await work.take("hold:s", keys: ["a", "b"], lease: .seconds(600)) == ["a", "b"])
            #expect(try await work.take("hold:s", keys: ["a", "c"], lease: .seconds(600)) == ["c"], "a is held")
            #expect(try await work.take("hold:t", keys: ["a"], lease: .seconds(600)) == ["a"], "another kind's key")
            try await work.complete("hold:s", keys: ["a"])
            #expect(try await work.take("hold:s", keys: ["a"], lease: .seconds(-1)) == ["a"], "let go of, then taken again with a lease that lapses")
            #expect(try await work.take("hold:s", keys: ["a"], lease: .seconds(600)) == ["a"], "its holder died: taken over")
            #expect(try await work.claim("hold:s", limit: 10, lease: .seconds(600)).isEmpty, "never claimed as work")

            try await Self.execute("UPDATE work SET owner = 'another-daemon' WHERE kind = 'hold:s' AND key = 'b'", on: store)
            try await work.complete("hold:s", keys: ["b"])
            try await work.renew("hold:s", keys: ["b"], lease: .seconds(-1))
            #expect(
                try await work.take("hold:s", keys: ["b"], lease: .seconds(600)).isEmpty,
                "another daemon's: neither let go of nor renewed by this one"
            )

            #expect(try await work.take("hold:s", keys: ["lapsed", "renewed"], lease: .seconds(-1)) == ["lapsed", "renewed"])
            try await work.renew("hold:s", keys: ["renewed"], lease: .seconds(600))
            try await work.add([Self.item("due-work", kind: "hold:x")])
            _ = try await work.claim("hold:x", limit: 1, lease: .seconds(-1))
            #expect(try await work.forgetLapsedTakes(kindsStartingWith: "hold:") == 1, "the lapsed take only, not lapsed work")
            #expect(try await work.take("hold:s", keys: ["renewed"], lease: .seconds(600)).isEmpty)
            #expect(try await work.claim("hold:x", limit: 10, lease: .seconds(600)).map(\.key) == ["due-work"])

            // Any prefix, not only a family's: of a stage's kind, of a kind that ends in the
            // last character there is, of every kind; and none of a kind that only starts alike.
            #expect(try await work.take("hold:filters[0]", keys: ["k"], lease: .seconds(-1)) == ["k"])
            #expect(try await work.take("hold:filters", keys: ["k"], lease: .seconds(-1)) == ["k"])
            #expect(try await work.take("hold:\u{10FFFF}", keys: ["k"], lease: .seconds(-1)) == ["k"])
            #expect(try await work.take("hola", keys: ["k"], lease: .seconds(-1)) == ["k"])
            #expect(try await work.forgetLapsedTakes(kindsStartingWith: "hold:filters[") == 1)
            #expect(try await work.forgetLapsedTakes(kindsStartingWith: "hold:\u{10FFFF}") == 1)
            #expect(try await work.forgetLapsedTakes(kindsStartingWith: "hold:") == 1, "hold:filters, not hola")
            #expect(try await work.forgetLapsedTakes(kindsStartingWith: "") == 1, "hola")
        }
    }

    /// A payload the database refuses as text (NUL) is stored as the other writes store it.
    @Test(arguments: StoreBackend.available)
    func aPayloadWithANulIsKept(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let work = store.pipeline("p").work
            try await work.add([WorkItem(kind: "job", key: "nul\u{0}key", payload: ["text": "a\u{0}b"], createdAt: 1)])
            let claimed = try await work.claim("job", limit: 10, lease: .seconds(600))
            #expect(claimed.map(\.payload) == [["text": "a\u{0}b"]], "\(claimed)")
        }
    }

    static func mark(_ key: String, group: String, at createdAt: Double, kind: String = "rate") -> WorkItem {
        WorkItem(kind: kind, key: key, payload: [:], createdAt: createdAt, group: group)
    }

    /// What `admit`, `accumulate` and an outcome's cursor add is never due, with the same due
    /// time on both stores, short of a taken key's: none is claimed, however long it waits,
    /// and none is removed with lapsed taken keys (`forgetLapsedTakes`).
    @Test(arguments: StoreBackend.available)
    func marksAccumulationsAndCursorsAreNeverDue(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let pipeline = store.pipeline("p")
            #expect(try await pipeline.work.admit(Self.mark("m", group: "ana", at: 1, kind: "hold:mark"), limits: []))
            _ = try await pipeline.work.accumulate(WorkItem(kind: "hold:digest", key: "d", payload: [1], createdAt: 1)) { $0 }
            try await pipeline.recordOutcome(
                deliveries: [],
                state: [],
                events: [],
                webhooks: [],
                finishing: [],
                progress: [WorkItem(kind: "hold:cursor", key: "e", payload: .null, createdAt: 1, cursor: "c")]
            )
            #expect(try await Self.dueTimes(store) == Array(repeating: WorkItem.neverDue, count: 3))
            #expect(try await pipeline.work.forgetLapsedTakes(kindsStartingWith: "hold:") == 0, "no taken key")
            for kind in ["hold:mark", "hold:digest", "hold:cursor"] {
                #expect(try await pipeline.work.claim(kind, limit: 10, lease: .seconds(600)).isEmpty, "\(kind) is never claimed")
            }
        }
    }

    /// The due times of the store's items, as stored: no operation shows them.
    static func dueTimes(_ store: any Store) async throws -> [Double] {
        if let sqlite = store as? SQLiteStore {
            return try await sqlite.database.read { db in try Double.fetchAll(db, sql: "SELECT due_at FROM work ORDER BY id") }
        }
        let postgres = try #require(store as? PostgresStore)
        return try await postgres.connections.rows("SELECT due_at FROM work ORDER BY id").decode(Double.self)
    }

    /// A rate: at most 2 marks in 10 minutes and 3 in a day, per group.
    @Test(arguments: StoreBackend.available)
    func anAdmissionCountsItsGroupsMarksWithinEachLimit(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let work = store.pipeline("p").work
            let now = 1_800_000_000.0
            let limits = [WorkLimit(count: 2, since: now - 600), WorkLimit(count: 3, since: now - 86_400)]
            try await work.add([Self.mark("old", group: "ana", at: now - 90_000), Self.mark("morning", group: "ana", at: now - 7_200)])
            #expect(try await work.admit(Self.mark("e1", group: "ana", at: now - 60), limits: limits))
            // Asked twice without adding: nothing is used up.
            #expect(try await work.admit(Self.mark("e2", group: "ana", at: now), limits: limits, adding: false))
            #expect(try await work.admit(Self.mark("e2", group: "ana", at: now), limits: limits, adding: false))
            // Ten minutes: e1 and e2; the day: morning, e1, e2.
            #expect(try await work.admit(Self.mark("e2", group: "ana", at: now), limits: limits))
            #expect(try await !work.admit(Self.mark("e3", group: "ana", at: now), limits: limits), "the ten minutes are full")
            #expect(try await work.admit(Self.mark("e2", group: "ana", at: now), limits: limits), "e2 again: admitted before, counted once")
            #expect(
                try await !work.admit(Self.mark("e4", group: "ana", at: now), limits: [WorkLimit(count: 3, since: now - 86_400)]),
                "so is the day"
            )
            // Another group, another kind, another pipeline: counted apart.
            #expect(try await work.admit(Self.mark("e5", group: "bob", at: now), limits: limits))
            #expect(try await work.admit(Self.mark("e6", group: "ana", at: now, kind: "other"), limits: limits))
            #expect(try await store.pipeline("q").work.admit(Self.mark("e7", group: "ana", at: now), limits: limits))
            // A group name with a NUL is counted as stored.
            #expect(try await work.admit(Self.mark("e8", group: "nul\u{0}", at: now), limits: [WorkLimit(count: 1, since: 0)]))
            #expect(try await !work.admit(Self.mark("e9", group: "nul\u{0}", at: now), limits: [WorkLimit(count: 1, since: 0)]))
            #expect(try await work.prune("rate", createdBefore: now - 86_400, limit: 100) == 1, "old marks are pruned like any item")
        }
    }

    /// Daemons admitting at once into one group never exceed its limit between them.
    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func daemonsAdmittingAtOnceShareTheLimit() async throws {
        var location = try await TestStores.freshPostgresDatabase()
        // Tasks wait for a pool's connection behind each other's locks: on a busy machine longer
        // than the 5 s a daemon waits before it takes the store for away.
        location.connectTimeout = 60
        let stores = [
            try await PostgresStore(location: location, logger: Self.logger), try await PostgresStore(location: location, logger: Self.logger),
        ]
        try await withCleanup(
            {
                let now = Date().timeIntervalSince1970
                let admitted = try await withThrowingTaskGroup(of: Bool.self) { group in
                    for index in 0..<60 {
                        group.addTask {
                            try await stores[index % 2].pipeline("p").work.admit(
                                Self.mark("e\(index)", group: "ana", at: now),
                                limits: [WorkLimit(count: 7, since: now - 60)]
                            )
                        }
                    }
                    return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
                }
                #expect(admitted == 7)
            },
            cleanup: { for store in stores { try? await store.close() } }
        )
    }

    /// Daemons claiming at once on one database split the due items: none is taken twice.
    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func daemonsClaimingAtOnceSplitTheItems() async throws {
        var location = try await TestStores.freshPostgresDatabase()
        // Tasks wait for a pool's connection behind each other's locks: on a busy machine longer
        // than the 5 s a daemon waits before it takes the store for away.
        location.connectTimeout = 60
        let stores = [
            try await PostgresStore(location: location, logger: Self.logger), try await PostgresStore(location: location, logger: Self.logger),
        ]
        try await withCleanup(
            {
                try await stores[0].pipeline("p").work.add((0..<200).map { Self.item(String(format: "k%03d", $0)) })
                let claimed = try await withThrowingTaskGroup(of: [String].self) { group in
                    for store in stores {
                        for _ in 0..<3 {
                            group.addTask {
                                var keys: [String] = []
                                while case let batch = try await store.pipeline("p").work.claim("job", limit: 7, lease: .seconds(600)), !batch.isEmpty
                                {
                                    keys += batch.map(\.key)
                                }
                                return keys
                            }
                        }
                    }
                    return try await group.reduce(into: [String]()) { $0 += $1 }
                }
                #expect(claimed.count == 200 && Set(claimed).count == 200, "\(claimed.count) claims of \(Set(claimed).count) items")

                // Grouped claims at once (a webhook's batches): every group goes whole to one claim.
                try await stores[0].pipeline("g").work.add((0..<120).map { Self.item(String(format: "k%03d", $0)) })
                let groups = try await withThrowingTaskGroup(of: [[WorkItem]].self) { group in
                    for store in stores {
                        for _ in 0..<3 {
                            group.addTask {
                                var claims: [[WorkItem]] = []
                                while case let batch = try await store.pipeline("g").work.claim(
                                    "job",
                                    limit: 7,
                                    lease: .seconds(600),
                                    grouping: { fresh in
                                        // Groups of three, named by their first key.
                                        stride(from: 0, to: fresh.count, by: 3).map { start in
                                            let members = fresh[start..<min(start + 3, fresh.count)]
                                            return (members.first!.key, members.map(\.id))
                                        }
                                    }
                                ), !batch.isEmpty {
                                    claims.append(batch)
                                }
                                return claims
                            }
                        }
                    }
                    return try await group.reduce(into: [[WorkItem]]()) { $0 += $1 }
                }
                let items = groups.flatMap { $0 }
                #expect(items.count == 120 && Set(items.map(\.key)).count == 120, "\(items.count) claimed of \(Set(items.map(\.key)).count) items")
                let claimsOfGroup = Dictionary(
                    grouping: groups.enumerated().flatMap { claim in claim.element.map { ($0.group ?? "", claim.offset) } },
                    by: \.0
                )
                #expect(claimsOfGroup.values.allSatisfy { Set($0.map(\.1)).count == 1 }, "a group split between claims")
            },
            cleanup: { for store in stores { try? await store.close() } }
        )
    }

    /// Webhook outcomes waiting in the table of an earlier version move into the work table with
    /// their batch, attempts and due time.
    @Test func sqliteWebhookOutcomesOfAnEarlierVersionMoveIntoWork() async throws {
        let directory = try TemporaryDirectory("work-migration")
        defer { directory.remove() }
        let path = directory.file("v15.sqlite")
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteStore.migrator.migrate(queue, upTo: "v15-idempotency-holder")
            try await queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO webhook_outbox (pipeline, target, outcome_id, payload, created_at, attempts, next_at, lease_until, batch) VALUES
                        ('w', 'http://127.0.0.1:1/hooks', 'w/e1/delivered', '{"n":1}', 1, 2, 0, 0, 'msg_1'),
                        ('w', 'http://127.0.0.1:1/hooks', 'w/e2/delivered', '{"n":2}', 2, 0, 0, 0, NULL),
                        ('w', 'http://127.0.0.1:1/hooks', 'w/e3/delivered', '{"n":3}', 3, 0, 9e9, 0, NULL),
                        ('w', 'http://127.0.0.1:1/hooks', 'w/e4/delivered', '{"text":"a\\u0000b"}', 4, 0, 0, 0, 'msg_4');
                        INSERT INTO poll_schedule (pipeline, source, user_id, due_at) VALUES ('w', 'sources[0]', '1', 0), ('w', 'sources[0]', '2',
                        9e9);
                        """
                )
            }
            try queue.close()
        }
        let store = try SQLiteStore(path: path)
        try await withCleanup(
            {
                let claimed = try await store.pipeline("w").work.claimWebhookOutcomes(limit: 10, lease: .seconds(600))
                #expect(claimed.map(\.outcomeID) == ["w/e1/delivered", "w/e2/delivered", "w/e4/delivered"], "the one not due yet waits")
                #expect(claimed.map(\.payload) == [["n": 1], ["n": 2], ["text": "a\u{0}b"]] && claimed.map(\.attempts) == [2, 0, 0])
                #expect(claimed.map(\.batch) == ["msg_1", WebhookOutcome.batchID(outcomeIDs: ["w/e2/delivered"]), "msg_4"])
                // Taken by the receiver: gone, under the key the move gave them.
                try await store.pipeline("w").work.complete(WebhookOutcome.kind, keys: Set(claimed.map(\.key)))
                #expect(try await store.pipeline("w").work.keys(WebhookOutcome.kind).count == 1, "only the one not due yet is left")
                let polled = try await store.pipeline("w").work.claimRecurring(
                    WorkItem.pollKind(source: "sources[0]"),
                    every: .seconds(60),
                    limit: 10
                )
                #expect(polled == ["1"], "a poller's schedule moves too, each user due as it was")
            },
            cleanup: { try? await store.close() }
        )
    }

    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func postgresWebhookOutcomesOfAnEarlierVersionMoveIntoWork() async throws {
        let location = try await TestStores.freshPostgresDatabase()
        try await location.withConnection(logger: Self.logger) { connection in
            _ = try await connection.query(
                "CREATE TABLE pushpipe_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
                logger: Self.logger
            )
            for migration in PostgresStore.migrations.prefix(while: { $0.name != "v13-work" }) {
                for statement in migration.sql { _ = try await connection.query(statement, logger: Self.logger) }
                _ = try await connection.query("INSERT INTO pushpipe_migrations (name) VALUES (\(migration.name))", logger: Self.logger)
            }
            _ = try await connection.query(
                """
                INSERT INTO webhook_outbox (pipeline, target, outcome_id, payload, created_at, attempts, next_at, lease_until, batch) VALUES
                ('w', 'http://127.0.0.1:1/hooks', 'w/e1/delivered', '{"n":1}', 1, 2, 0, 0, 'msg_1'),
                ('w', 'http://127.0.0.1:1/hooks', 'w/e2/delivered', '{"text":"a\\u0000b"}', 2, 0, 0, 0, NULL),
                ('w', 'http://127.0.0.1:1/hooks', 'w/e3/delivered', '{"n":3}', 3, 0, 9e9, 0, NULL),
                ('w', 'http://127.0.0.1:1/hooks', 'w/e4/delivered', '{"n":4}', 4, 0, 0, 9e9, 'msg_4')
                """,
                logger: Self.logger
            )
            _ = try await connection.query(
                """
                INSERT INTO poll_schedule (pipeline, source, user_id, due_at) VALUES ('w', 'sources[0]', '1', 0), ('w', 'sources[0]', '2', 9e9)
                """,
                logger: Self.logger
            )
        }
        let store = try await PostgresStore(location: location, logger: Self.logger)
        try await withCleanup(
            {
                let claimed = try await store.pipeline("w").work.claimWebhookOutcomes(limit: 10, lease: .seconds(600))
                #expect(
                    claimed.map(\.outcomeID) == ["w/e1/delivered", "w/e2/delivered"] && claimed.map(\.attempts) == [2, 0],
                    "not the one not due yet, nor the one a daemon of the earlier version holds"
                )
                #expect(claimed.first?.batch == "msg_1" && claimed.last?.payload == ["text": "a\u{0}b"])
                let polled = try await store.pipeline("w").work.claimRecurring(
                    WorkItem.pollKind(source: "sources[0]"),
                    every: .seconds(60),
                    limit: 10
                )
                #expect(polled == ["1"], "a poller's schedule moves too, each user due as it was")
                // That daemon let go of it (its lease ran out): a retention pass takes it over.
                _ = try await store.connections.rows("UPDATE webhook_outbox SET lease_until = 0")
                #expect(try await store.pipeline("w").work.prune(WebhookOutcome.kind, createdBefore: 0, limit: 10) == 0)
                let adopted = try await store.pipeline("w").work.claimWebhookOutcomes(limit: 10, lease: .seconds(600))
                #expect(adopted.map(\.outcomeID) == ["w/e4/delivered"] && adopted.first?.batch == "msg_4")
                // New items get ids after the moved ones.
                try await store.pipeline("w").work.add([Self.item("after")])
                let added = try #require(try await store.pipeline("w").work.claim("job", limit: 1, lease: .seconds(600)).first)
                #expect(added.id > (claimed.map(\.id).max() ?? 0))
            },
            cleanup: { try? await store.close() }
        )
    }

    /// Runs a statement on the store's own database (what no operation of the queue does).
    static func execute(_ sql: String, on store: any Store) async throws {
        if let sqlite = store as? SQLiteStore {
            try await sqlite.database.write { db in try db.execute(sql: sql) }
        } else {
            let postgres = try #require(store as? PostgresStore)
            _ = try await postgres.connections.rows(PostgresQuery(unsafeSQL: sql))
        }
    }
}
