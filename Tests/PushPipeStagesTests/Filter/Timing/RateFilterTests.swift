import Foundation
import Logging
import PushPipeCore
import PushPipeTesting
import Testing

@testable import PushPipeStages

/// Throttles and frequency caps on a real store, with a clock the test moves.
@Suite struct RateFilterTests {
    typealias T = TimingFilterTests

    static func event(_ id: String, user: String?, _ body: JSON = [:]) -> Event { Event(id: id, pipeline: "p", user: user, body: body) }

    @Test func aThrottleLetsLimitEventsPerKeyThroughInAnyPeriod() async throws {
        try await T.withContext(at: "2026-06-01T12:00:00Z") { context, clock in
            let filter: ThrottleFilter = try await T.filter("timing.throttle", "limit: 2, period: 1h, key_field: thread")
            func code(_ id: String, thread: String) async throws -> String? {
                let result = try await filter.apply(to: Self.event(id, user: "ana", ["thread": .string(thread)]), context: context)
                return T.passed(result) ? "pass" : T.dropCode(result)
            }
            #expect(try await code("e1", thread: "t1") == "pass")
            clock.advance(seconds: 1800)
            #expect(try await code("e2", thread: "t1") == "pass")
            #expect(try await code("e3", thread: "t1") == "throttled")
            #expect(try await code("e4", thread: "t2") == "pass", "another key")
            #expect(try await code("e2", thread: "t1") == "pass", "the same event again is counted once")
            // An hour after the first, one place is free again; rolling, not a fixed hour.
            clock.advance(seconds: 1801)
            #expect(try await code("e5", thread: "t1") == "pass")
            #expect(try await code("e6", thread: "t1") == "throttled")
            // A broadcast's copies for each zone count as one: all go, or none.
            let zones = ["Asia/Tokyo", "Europe/Berlin", "UTC"].map { zone in
                var copy = Self.event("news@\(zone)", user: nil, ["thread": "t9"])
                copy.audience = Audience(keys: ["time_zone"], recognized: [], value: zone, orUnset: false, origin: "news")
                return copy
            }
            for copy in zones { #expect(T.passed(try await filter.apply(to: copy, context: context)), "\(copy.id)") }
            #expect(T.passed(try await filter.apply(to: Self.event("other", user: nil, ["thread": "t9"]), context: context)), "the second of two")
            #expect(T.dropCode(try await filter.apply(to: Self.event("third", user: nil, ["thread": "t9"]), context: context)) == "throttled")
        }
    }

    @Test func aCapCountsOnePersonAcrossPipelinesByEveryRule() async throws {
        try await T.withContext(at: "2026-06-01T12:00:00Z") { context, clock in
            let config = "rules: [{limit: 3, period: 1d}, {limit: 1, period: 10m}], bypass_field: priority, bypass_values: [critical]"
            let cap: FrequencyCapFilter = try await T.filter("timing.cap", config)
            var other = context
            other.pipeline = "q"
            func code(_ id: String, in context: StageContext, _ body: JSON = [:]) async throws -> String? {
                let result = try await cap.apply(to: Self.event(id, user: "ana", body), context: context)
                return T.passed(result) ? "pass" : T.dropCode(result)
            }
            #expect(try await code("a1", in: context) == "pass")
            #expect(try await code("b1", in: other) == "capped", "one in ten minutes, whichever pipeline")
            #expect(try await code("b2", in: other, ["priority": "critical"]) == "pass", "a critical one is not capped")
            clock.advance(seconds: 601)
            #expect(try await code("b3", in: other) == "pass", "…and was not counted")
            clock.advance(seconds: 601)
            #expect(try await code("a2", in: context) == "pass")
            clock.advance(seconds: 601)
            #expect(try await code("a3", in: context) == "capped", "three a day")
            // A broadcast has no one person to count.
            #expect(T.passed(try await cap.apply(to: Self.event("all", user: nil), context: context)))
        }
    }

    @Test func aDryRunAsksAndCountsNothing() async throws {
        try await T.withContext(at: "2026-06-01T12:00:00Z") { context, _ in
            let filter: ThrottleFilter = try await T.filter("timing.throttle", "limit: 1, period: 1h")
            var dry = context
            dry.mode = .dryRun
            for index in 0..<3 { #expect(T.passed(try await filter.apply(to: Self.event("d\(index)", user: "ana"), context: dry))) }
            #expect(T.passed(try await filter.apply(to: Self.event("live", user: "ana"), context: context)))
            #expect(T.dropCode(try await filter.apply(to: Self.event("dry-after", user: "ana"), context: dry)) == "throttled")
        }
    }

    @Test func marksOlderThanEveryRuleArePruned() async throws {
        try await T.withContext(at: "2026-06-01T12:00:00Z") { context, clock in
            let filter: ThrottleFilter = try await T.filter("timing.throttle", "limit: 5, period: 10m")
            for index in 0..<4 { _ = try await filter.apply(to: Self.event("e\(index)", user: "u\(index)"), context: context) }
            clock.advance(seconds: 601)
            let pruning = Task { try await filter.run(context: context) }
            defer { pruning.cancel() }
            try await eventually("the old marks are gone") { try await context.work.keys("throttle:throttle").isEmpty }
        }
    }
}
