import Logging
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipeSQLite

/// The SQLite store keeps its leases, due times and expiries on the clock it is given,
/// so a lease of minutes or a time to live of a day is tested by moving the clock, exactly at
/// its edge, instead of with leases of milliseconds and a sleep.
@Suite struct SQLiteStoreClockTests {
    static func withStore(_ body: (SQLiteStore, ManualClock) async throws -> Void) async throws {
        let directory = try TemporaryDirectory("clock")
        defer { directory.remove() }
        let clock = ManualClock()
        let store = try SQLiteStore(path: directory.file("state.sqlite"), clock: clock)
        try await withCleanup({ try await body(store, clock) }, cleanup: { try? await store.close() })
    }

    @Test func aLeaseEndsAndARetryFallsDueWhenTheClockSaysSo() async throws {
        try await Self.withStore { store, clock in
            let work = store.pipeline("p").work
            try await work.add([WorkItem(kind: "job", key: "a", payload: [:], createdAt: clock.now)])
            let claimed = try await work.claim("job", limit: 10, lease: .seconds(300))
            #expect(claimed.map(\.key) == ["a"])
            clock.advance(by: .seconds(299))
            #expect(try await work.claim("job", limit: 10, lease: .seconds(300)).isEmpty, "held for 300 s: 299 s in, nobody takes it")
            clock.advance(by: .seconds(2))
            let again = try await work.claim("job", limit: 10, lease: .seconds(300))
            #expect(again.map(\.key) == ["a"] && again.first?.attempts == 0, "its holder died: taken again, no attempt counted")

            try await work.retry("job", keys: Set(again.map(\.key)), after: .seconds(3600))
            clock.advance(by: .seconds(3599))
            #expect(try await work.claim("job", limit: 10, lease: .seconds(300)).isEmpty, "not due before its backoff ends")
            clock.advance(by: .seconds(2))
            #expect(try await work.claim("job", limit: 10, lease: .seconds(300)).first?.attempts == 1)
        }
    }

    @Test func aTakenKeyLapsesWithItsLease() async throws {
        try await Self.withStore { store, clock in
            let work = store.pipeline("p").work
            let first = try await work.take("hold", keys: ["game-1"], lease: .seconds(60))
            #expect(first == ["game-1"])
            let second = try await work.take("hold", keys: ["game-1"], lease: .seconds(60))
            #expect(second.isEmpty)
            clock.advance(by: .seconds(61))
            let third = try await work.take("hold", keys: ["game-1"], lease: .seconds(60))
            #expect(third == ["game-1"], "a dead holder's key is free after its lease")
        }
    }

    @Test func anIdempotencyKeyLivesForItsTimeToLive() async throws {
        try await Self.withStore { store, clock in
            let key = IdempotencyKey(pipeline: "p", scope: "POST /events token:ab12", key: "k1")
            #expect(try await store.claimIdempotencyKey(key, fingerprint: "f1", hold: .seconds(60), ttl: .seconds(86_400)) == .claimed)
            try await store.recordIdempotentAnswer(IdempotentAnswer(key: key, status: 202, body: ["id": "e1"]))
            clock.advance(by: .seconds(86_399))
            #expect(try await store.claimIdempotencyKey(key, fingerprint: "f2", hold: .seconds(60), ttl: .seconds(86_400)) == .usedForAnotherRequest)
            #expect(try await store.pipeline("p").pruneExpiredIdempotencyKeys(limit: 10) == 0)
            clock.advance(by: .seconds(2))
            #expect(try await store.pipeline("p").pruneExpiredIdempotencyKeys(limit: 10) == 1, "a day later it is gone")
            #expect(try await store.claimIdempotencyKey(key, fingerprint: "f2", hold: .seconds(60), ttl: .seconds(86_400)) == .claimed)
        }
    }

    @Test func aQueuedEventStaysWithItsDaemonForItsLease() async throws {
        try await Self.withStore { store, clock in
            var event = QueuedEvent(pipeline: "p", source: "events", eventID: "e1", user: "alice", time: clock.now, body: [:], lease: .seconds(30))
            event.instance = QueuedEvent.thisProcess
            try await store.enqueue(event)
            #expect(
                try await store.pipeline("p").claimQueuedEvents(source: "events", lease: .seconds(30), limit: 10).isEmpty,
                "this process works on it under a running lease"
            )
            clock.advance(by: .seconds(29))
            try await store.pipeline("p").renewLeases(source: "events", keys: [event.key], lease: .seconds(30))
            clock.advance(by: .seconds(29))
            #expect(try await store.pipeline("p").claimQueuedEvents(source: "events", lease: .seconds(30), limit: 10).isEmpty, "renewed at 29 s")
            clock.advance(by: .seconds(2))
            #expect(
                try await store.pipeline("p").claimQueuedEvents(source: "events", lease: .seconds(30), limit: 10).map(\.eventID) == ["e1"],
                "not renewed for a lease: taken back"
            )
        }
    }

    /// The retention pass runs at start and then every interval of the clock, not of the machine.
    @Test func retentionRunsEveryIntervalOfItsClock() async throws {
        try await Self.withStore { store, clock in
            let pruner = RetentionPruner(
                policy: RetentionPolicy(maxAge: .seconds(86_400), perUser: 0, interval: .seconds(3600)),
                store: store.pipeline("p"),
                logger: Logger(label: "retention"),
                clock: clock
            )
            let running = Task { await pruner.run() }
            try await clock.sleepers(atLeast: 1)
            try await store.pipeline("p").recordOutcome(
                deliveries: [
                    DeliveryRow.of("e", user: "u", token: "ab", at: clock.now)
                ],
                state: []
            )
            clock.advance(by: .seconds(86_401))
            // The pass that ran when the clock passed the interval (it slept once more after it).
            try await clock.sleepers(atLeast: 1)
            #expect(try await store.pipeline("p").pruneDeliveries(createdBefore: clock.now, limit: 10) == 0, "the pass removed the day-old row")
            running.cancel()
            await running.value
        }
    }
}
