import Foundation
import Logging
import PushPipeCore
import PushPipePostgres
import PushPipePostgresTesting
import PushPipeSQLite
import PushPipeTesting
import Testing

@testable import PushPipeStages

/// Digests on both stores: one per user and key per window, every event in it once, closed
/// once whoever closes it.
@Suite struct DigestFilterTests {
    typealias T = TimingFilterTests
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
        static var available: [Backend] { TestStores.postgresURL == nil ? [.sqlite] : allCases }
    }

    static func withContext(_ backend: Backend, _ body: (StageContext, ManualClock) async throws -> Void) async throws {
        let directory = try TemporaryDirectory("digest")
        defer { directory.remove() }
        let store: any Store =
            switch backend {
            case .sqlite: try SQLiteStore(path: directory.file("state.sqlite"))
            case .postgres: try await PostgresStore(location: try await TestStores.freshPostgresDatabase(), logger: Logger(label: "test"))
            }
        let clock = ManualClock(now: T.instant("2026-06-01T12:00:00Z"))
        let context = StageContext(pipeline: "p", stage: "filters[0]", store: store, logger: Logger(label: "digest"), mode: .live, clock: clock)
        try await withCleanup({ try await body(context, clock) }, cleanup: { try? await store.close() })
    }

    static func comment(_ id: String, post: String = "p1", by actor: String) -> Event {
        Event(id: id, pipeline: "p", user: "ana", body: ["post": .string(post), "actor": .string(actor), "text": .string("comment \(id)")])
    }

    static func batched(_ result: FilterResult) -> EventHold? {
        if case .batched(let hold) = result { return hold }
        return nil
    }

    static func carried(_ result: FilterResult) -> JSON? {
        if case .pass(let event) = result { return event.body["digest"] }
        return nil
    }

    /// The opener, back when the digest closes.
    static func back(_ event: Event, _ hold: EventHold) -> Event {
        var back = event
        back.holds = [PassedHold(stage: hold.holder, until: hold.until.timeIntervalSince1970)]
        return back
    }

    @Test(arguments: Backend.available)
    func theFirstEventCarriesEveryEventOfItsWindow(_ backend: Backend) async throws {
        try await Self.withContext(backend) { context, clock in
            let filter: DigestFilter = try await T.filter("timing.digest", "key_field: post, window: 10m, actor_field: actor, max_items: 2")
            let first = Self.comment("c1", by: "bob")
            let opened = try #require(T.hold(try await filter.apply(to: first, context: context)))
            #expect(opened.kind == .batched && opened.code == "digest")
            #expect(opened.until.timeIntervalSince1970 == T.instant("2026-06-01T12:10:00Z"))
            clock.advance(seconds: 60)
            let joined = try #require(Self.batched(try await filter.apply(to: Self.comment("c2", by: "cy"), context: context)))
            #expect(joined.until == opened.until, "the window does not move")
            #expect(!joined.reason.contains("c1"), "another caller's event id is not shown")
            #expect(Self.batched(try await filter.apply(to: Self.comment("c3", by: "bob"), context: context)) != nil)
            #expect(Self.batched(try await filter.apply(to: Self.comment("c2", by: "cy"), context: context)) != nil, "sent again")
            // Another post: a digest of its own.
            #expect(T.hold(try await filter.apply(to: Self.comment("d1", post: "p2", by: "dee"), context: context)) != nil)

            clock.advance(seconds: 540)
            // Closing: a new comment opens a new digest at once.
            let closing = try await filter.apply(to: Self.back(first, opened), context: context)
            let digest = try #require(Self.carried(closing))
            #expect(digest["count"] == 3, "c2 sent twice counts once")
            #expect(digest["actors"] == ["bob", "cy"])
            #expect(digest["items"]?.arrayValue?.map { $0["text"] } == ["comment c2", "comment c3"], "the last two")
            #expect(T.hold(try await filter.apply(to: Self.comment("c4", by: "eve"), context: context)) != nil)
            // Its carrier killed on its way, sent again: the same digest, not the new one.
            let again = try #require(Self.carried(try await filter.apply(to: Self.back(first, opened), context: context)))
            #expect(again == digest)
            // Once its outcome is final, the digest is gone: the carrier sent again carries nothing.
            guard case .pass(let carrier) = closing, let done = carrier.onComplete else {
                Issue.record("the carrier removes its digest when done")
                return
            }
            #expect(carrier.carries.map(\.id) == ["c2", "c3"], "their records follow the carrier's outcome")
            await done(EventReport(eventID: first.id, pipeline: "p", user: "ana", status: .delivered))
            #expect(T.dropCode(try await filter.apply(to: Self.back(first, opened), context: context)) == "digest_closed")
        }
    }

    @Test(arguments: Backend.available)
    func aFullDigestClosesEarlyWithTheEventThatFilledIt(_ backend: Backend) async throws {
        try await Self.withContext(backend) { context, _ in
            let filter: DigestFilter = try await T.filter("timing.digest", "window: 1h, close_at: 3, keep: first, max_items: 5")
            let first = Self.comment("c1", by: "bob")
            let opened = try #require(T.hold(try await filter.apply(to: first, context: context)))
            #expect(Self.batched(try await filter.apply(to: Self.comment("c2", by: "cy"), context: context)) != nil)
            let digest = try #require(Self.carried(try await filter.apply(to: Self.comment("c3", by: "dee"), context: context)))
            #expect(digest["count"] == 3)
            #expect(digest["items"]?.arrayValue?.map { $0["text"] } == ["comment c1", "comment c2", "comment c3"])
            // A new digest opens; the first opener, back at its hour, neither sends nor takes it.
            let next = try #require(T.hold(try await filter.apply(to: Self.comment("c4", by: "eve"), context: context)))
            #expect(T.dropCode(try await filter.apply(to: Self.back(first, opened), context: context)) == "digest_closed")
            let later = try #require(Self.carried(try await filter.apply(to: Self.back(Self.comment("c4", by: "eve"), next), context: context)))
            #expect(later["count"] == 1)
        }
    }

    /// A first event that never comes back (a filter before the digest dropped it) does not
    /// keep its digest open for ever: the next event a minute after its end opens it again,
    /// with everything in it, and carries it.
    @Test(arguments: Backend.available)
    func aDigestWhoseFirstEventNeverCameBackIsTakenOver(_ backend: Backend) async throws {
        try await Self.withContext(backend) { context, clock in
            let filter: DigestFilter = try await T.filter("timing.digest", "window: 10m")
            #expect(T.hold(try await filter.apply(to: Self.comment("c1", by: "bob"), context: context)) != nil)
            #expect(Self.batched(try await filter.apply(to: Self.comment("c2", by: "cy"), context: context)) != nil)
            clock.advance(seconds: 600 + 61)
            let takeover = try #require(T.hold(try await filter.apply(to: Self.comment("c3", by: "dee"), context: context)))
            #expect(takeover.until.timeIntervalSince1970 == clock.now + 600)
            clock.advance(seconds: 600)
            let digest = try #require(Self.carried(try await filter.apply(to: Self.back(Self.comment("c3", by: "dee"), takeover), context: context)))
            #expect(digest["count"] == 3)
        }
    }

    /// Two daemons on one database, forty comments at once: one opens, every other joins, and
    /// the digest that closes holds them all.
    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func daemonsAddingAtOnceLoseNoEventAndOpenOneDigest() async throws {
        let location = try await TestStores.freshPostgresDatabase()
        let stores = [
            try await PostgresStore(location: location, logger: Logger(label: "a")),
            try await PostgresStore(location: location, logger: Logger(label: "b")),
        ]
        try await withCleanup(
            {
                let filter: DigestFilter = try await T.filter("timing.digest", "window: 10m")
                let clock = ManualClock(now: T.instant("2026-06-01T12:00:00Z"))
                let contexts = stores.map {
                    StageContext(pipeline: "p", stage: "filters[0]", store: $0, logger: Logger(label: "digest"), mode: .live, clock: clock)
                }
                let results = try await withThrowingTaskGroup(of: (String, EventHold?).self) { group in
                    for index in 0..<40 {
                        group.addTask {
                            let event = Self.comment("c\(index)", by: "u\(index)")
                            return (event.id, T.hold(try await filter.apply(to: event, context: contexts[index % 2])))
                        }
                    }
                    return try await group.reduce(into: [(String, EventHold?)]()) { $0.append($1) }
                }
                let openers = results.filter { $0.1 != nil }
                #expect(openers.count == 1)
                let (id, opened) = try #require(openers.first)
                let hold = try #require(opened)
                let result = try await filter.apply(to: Self.back(Self.comment(id, by: "x"), hold), context: contexts[0])
                let digest = try #require(Self.carried(result))
                #expect(digest["count"] == 40)
            },
            cleanup: { for store in stores { try? await store.close() } }
        )
    }

    /// A sliding window: each event keeps the digest open `window` after it, never past
    /// `max_window` after the first; the first event, back at the old end, waits for the new one.
    @Test(arguments: Backend.available)
    func aSlidingWindowMovesWithEachEventUpToItsMaximum(_ backend: Backend) async throws {
        try await Self.withContext(backend) { context, clock in
            let filter: DigestFilter = try await T.filter("timing.digest", "window: 10m, max_window: 25m")
            let first = Self.comment("c1", by: "bob")
            let opened = try #require(T.hold(try await filter.apply(to: first, context: context)))
            #expect(opened.until.timeIntervalSince1970 == T.instant("2026-06-01T12:10:00Z"))
            clock.advance(seconds: 8 * 60)
            let second = try #require(Self.batched(try await filter.apply(to: Self.comment("c2", by: "cy"), context: context)))
            #expect(second.until.timeIntervalSince1970 == T.instant("2026-06-01T12:18:00Z"), "ten minutes after the last")
            clock.advance(seconds: 2 * 60)
            let waitsOn = try #require(T.hold(try await filter.apply(to: Self.back(first, opened), context: context)))
            #expect(waitsOn.until == second.until, "back at the old end: not yet")
            clock.advance(seconds: 7 * 60)
            let third = try #require(Self.batched(try await filter.apply(to: Self.comment("c3", by: "dee"), context: context)))
            #expect(third.until.timeIntervalSince1970 == T.instant("2026-06-01T12:25:00Z"), "no later than 25 minutes after the first")
            clock.advance(seconds: 60)
            let again = try #require(T.hold(try await filter.apply(to: Self.back(first, waitsOn), context: context)))
            clock.advance(seconds: again.until.timeIntervalSince1970 - clock.now)
            let digest = try #require(Self.carried(try await filter.apply(to: Self.back(first, again), context: context)))
            #expect(digest["count"] == 3)
            // A window once opened keeps its terms: a reload to a fixed window closes nothing early,
            // and one to a longer slide moves nothing further.
            let opener = Self.comment("f1", post: "p9", by: "bob")
            let sliding = try #require(T.hold(try await filter.apply(to: opener, context: context)))
            let fixed: DigestFilter = try await T.filter("timing.digest", "window: 1h")
            clock.advance(seconds: 5 * 60)
            let later = try #require(Self.batched(try await fixed.apply(to: Self.comment("f2", post: "p9", by: "cy"), context: context)))
            #expect(later.until.timeIntervalSince1970 == clock.now + 600, "ten minutes after f2, as it opened")
            clock.advance(seconds: sliding.until.timeIntervalSince1970 - clock.now)
            #expect(T.hold(try await fixed.apply(to: Self.back(opener, sliding), context: context)) != nil, "it slid: not yet")
        }
    }

    /// A look-back: an event after a quiet spell goes at once; one that follows another within
    /// `look_back` opens a digest, and the ones after it join.
    @Test(arguments: Backend.available)
    func anEventAfterAQuietSpellGoesAtOnce(_ backend: Backend) async throws {
        try await Self.withContext(backend) { context, clock in
            let filter: DigestFilter = try await T.filter("timing.digest", "key_field: post, window: 5m, look_back: 10m")
            let alone = try await filter.apply(to: Self.comment("c1", by: "bob"), context: context)
            #expect(T.passed(alone) && Self.carried(alone) == nil, "sent at once, as itself")
            #expect(T.passed(try await filter.apply(to: Self.comment("d1", post: "p2", by: "bob"), context: context)), "another post is quiet")
            clock.advance(seconds: 4 * 60)
            let second = Self.comment("c2", by: "cy")
            let opened = try #require(T.hold(try await filter.apply(to: second, context: context)), "four minutes after c1: a digest")
            #expect(Self.batched(try await filter.apply(to: Self.comment("c3", by: "dee"), context: context)) != nil)
            clock.advance(seconds: 5 * 60)
            let digest = try #require(Self.carried(try await filter.apply(to: Self.back(second, opened), context: context)))
            #expect(digest["count"] == 2, "c2 and c3; c1 went alone")
            // Six minutes after c3: batched again; eleven minutes after everything: at once.
            clock.advance(seconds: 60)
            let fourth = Self.comment("c4", by: "eve")
            let reopened = try #require(T.hold(try await filter.apply(to: fourth, context: context)))
            clock.advance(seconds: 5 * 60)
            #expect(Self.carried(try await filter.apply(to: Self.back(fourth, reopened), context: context))?["count"] == 1)
            clock.advance(seconds: 11 * 60)
            let quiet = try await filter.apply(to: Self.comment("c5", by: "fay"), context: context)
            #expect(T.passed(quiet) && Self.carried(quiet) == nil)
            await T.expectRefusal("timing.digest", "window: 10m, max_window: 5m", "filters[0].max_window @3:58")
        }
    }
}
