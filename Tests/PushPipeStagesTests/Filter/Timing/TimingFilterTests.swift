import Foundation
import Logging
import PushPipeCore
import PushPipeSQLite
import PushPipeTesting
import Testing

@testable import PushPipeStages

/// The timing filters on a real store (users' zones are settings) and a clock the test sets.
@Suite struct TimingFilterTests {
    static func instant(_ iso: String) -> Double { try! Date(iso, strategy: .iso8601).timeIntervalSince1970 }

    /// The filter as a pipeline file configures it (`config`: its keys after `type`, YAML), loaded as the daemon loads it.
    static func filter<F>(_ type: String, _ config: String, as: F.Type = F.self) async throws -> F {
        let directory = try TemporaryDirectory("timing-config")
        defer { directory.remove() }
        let definition = try await loadPipeline(
            """
            pipeline: p
            sources: [{type: http.event, path: /events}]
            filters: [{type: \(type), \(config)}]
            renderer: {type: json.template, payload: {}}
            transport: {type: stdout}
            """,
            in: directory
        )
        return try #require(definition.filters.first?.stage as? F)
    }

    static func schedule(_ config: String) async throws -> ScheduleFilter { try await filter("timing.schedule", config) }
    static func window(_ config: String) async throws -> SendWindowFilter { try await filter("timing.window", config) }

    /// Where loading `config` is refused: the diagnostic's key path and line:column.
    static func refusal(_ type: String, _ config: String) async -> String? {
        do {
            _ = try await filter(type, config, as: (any Filter).self)
            return nil
        } catch let error as ConfigurationError {
            return error.diagnostics.first.map { "\($0.keyPath) @\($0.location.line):\($0.location.column)" }
        } catch {
            return "\(error)"
        }
    }

    /// A context on a fresh SQLite store at `now`, where `zones` are users' `time_zone` settings.
    static func withContext(at now: String, zones: [String: String] = [:], _ body: (StageContext, ManualClock) async throws -> Void) async throws {
        let directory = try TemporaryDirectory("timing")
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        try await withCleanup(
            {
                for (user, zone) in zones { try await store.pipeline("p").setSettings(["time_zone": .string(zone)], user: user) }
                // Her phone says Tokyo, her settings New York: the device's zone comes first.
                try await store.pipeline("p").setSettings(["time_zone": "America/New_York", "device_time_zone": "Asia/Tokyo"], user: "traveller")
                let clock = ManualClock(now: instant(now))
                let context = StageContext(
                    pipeline: "p",
                    stage: "filters[0]",
                    store: store,
                    logger: Logger(label: "timing"),
                    mode: .live,
                    clock: clock
                )
                try await body(context, clock)
            },
            cleanup: { try? await store.close() }
        )
    }

    static func hold(_ result: FilterResult) -> EventHold? {
        if case .hold(let hold) = result { return hold }
        return nil
    }

    static func dropCode(_ result: FilterResult) -> String? {
        if case .drop(_, let code, _) = result { return code }
        return nil
    }

    static func passed(_ result: FilterResult) -> Bool {
        if case .pass = result { return true }
        return false
    }

    @Test func anInstantInTheEventLessBeforeIsWhenItIsSent() async throws {
        try await Self.withContext(at: "2026-06-01T08:00:00Z") { context, clock in
            let filter = try await Self.schedule("at_field: appointment_at, before: 24h")
            let event = Event(pipeline: "p", user: "ana", body: ["appointment_at": "2026-06-03T09:30:00+02:00"])
            let hold = try #require(Self.hold(try await filter.apply(to: event, context: context)))
            #expect(hold.kind == .scheduled)
            #expect(hold.until.timeIntervalSince1970 == Self.instant("2026-06-02T07:30:00Z"))
            #expect(hold.code == "send_at")
            // Back from its wait (held by this stage): it goes.
            var back = event
            back.holds = [PassedHold(stage: hold.holder, until: hold.until.timeIntervalSince1970)]
            clock.advance(seconds: hold.until.timeIntervalSince1970 - clock.now + 0.5)
            #expect(Self.passed(try await filter.apply(to: back, context: context)))
        }
    }

    @Test func aLocalTimeIsInEachUsersZone() async throws {
        try await Self.withContext(at: "2026-06-01T10:00:00Z", zones: ["tokyo": "Asia/Tokyo", "ny": "America/New_York", "lost": "Mars/Olympus"]) {
            context,
            _ in
            let filter = try await Self.schedule("local_time: \"09:00\", time_zone: Europe/Berlin")
            func until(_ user: String) async throws -> Double? {
                try Self.hold(await filter.apply(to: Event(pipeline: "p", user: user, body: [:]), context: context))?.until.timeIntervalSince1970
            }
            // 10:00 UTC is 19:00 in Tokyo (the next 09:00 is tomorrow's), 06:00 in New York (today's).
            #expect(try await until("tokyo") == Self.instant("2026-06-02T00:00:00Z"))
            #expect(try await until("ny") == Self.instant("2026-06-01T13:00:00Z"))
            #expect(try await until("traveller") == Self.instant("2026-06-02T00:00:00Z"))
            // No zone, or one this machine does not know: the stage's (12:00 in Berlin: tomorrow 09:00).
            #expect(try await until("nobody") == Self.instant("2026-06-02T07:00:00Z"))
            #expect(try await until("lost") == Self.instant("2026-06-02T07:00:00Z"))
        }
    }

    @Test func aLateInstantIsSentOrSkippedAsThePipelineSays() async throws {
        try await Self.withContext(at: "2026-06-01T12:00:00Z") { context, _ in
            let body: JSON = ["at": "2026-06-01T11:00:00Z"]
            let send = try await Self.schedule("at_field: at")
            let skip = try await Self.schedule("at_field: at, late: skip")
            #expect(Self.passed(try await send.apply(to: Event(pipeline: "p", user: "u", body: body), context: context)))
            #expect(Self.dropCode(try await skip.apply(to: Event(pipeline: "p", user: "u", body: body), context: context)) == "late")
            // Within `late_after` it is on time.
            let recent: JSON = ["at": "2026-06-01T11:59:30Z"]
            #expect(Self.passed(try await skip.apply(to: Event(pipeline: "p", user: "u", body: recent), context: context)))
            // An event that waited for another rule is not late.
            var waited = Event(pipeline: "p", user: "u", body: body)
            waited.holds = [PassedHold(stage: "timing.window", until: 0)]
            #expect(Self.passed(try await skip.apply(to: waited, context: context)))
        }
    }

    @Test func anEventThatWaitedPastItsExpiryIsNotSent() async throws {
        try await Self.withContext(at: "2026-06-01T12:00:00Z") { context, clock in
            let filter = try await Self.schedule("delay: 10m, expires_after: 1h")
            let event = Event(pipeline: "p", user: "u", body: [:])
            let hold = try #require(Self.hold(try await filter.apply(to: event, context: context)))
            var back = event
            back.holds = [PassedHold(stage: hold.holder, until: hold.until.timeIntervalSince1970)]
            // The daemons were down for two hours.
            clock.advance(seconds: 2 * 3600)
            #expect(Self.dropCode(try await filter.apply(to: back, context: context)) == "expired")
        }
    }

    @Test func anInstantThatIsNotOneDropsTheEventWithACode() async throws {
        try await Self.withContext(at: "2026-06-01T12:00:00Z") { context, _ in
            let filter = try await Self.schedule("at_field: at, delay_field: wait")
            for body: JSON in [
                ["at": "tomorrow"], ["at": "2026-06-01T25:00:00Z"], ["at": ["x": 1]], ["wait": "-5m"], ["wait": "2y"], ["wait": 1e300],
            ] {
                #expect(
                    Self.dropCode(try await filter.apply(to: Event(pipeline: "p", user: "u", body: body), context: context)) == "invalid_time",
                    "\(body)"
                )
            }
            // Absent: now.
            #expect(Self.passed(try await filter.apply(to: Event(pipeline: "p", user: "u", body: [:]), context: context)))
            let delayed = try #require(
                Self.hold(try await filter.apply(to: Event(pipeline: "p", user: "u", body: ["wait": "90s"]), context: context))
            )
            #expect(delayed.until.timeIntervalSince1970 == Self.instant("2026-06-01T12:01:30Z"))
        }
    }

    @Test func jitterSpreadsEventsTheSameWayEveryTime() async throws {
        try await Self.withContext(at: "2026-06-01T12:00:00Z") { context, _ in
            let filter = try await Self.schedule("delay: 1m, jitter: 10m")
            var instants: [Double] = []
            for index in 0..<200 {
                let event = Event(id: "e\(index)", pipeline: "p", user: "u", body: [:])
                let first = try #require(Self.hold(try await filter.apply(to: event, context: context))).until.timeIntervalSince1970
                let again = try #require(Self.hold(try await filter.apply(to: event, context: context))).until.timeIntervalSince1970
                #expect(first == again)
                instants.append(first)
            }
            let start = Self.instant("2026-06-01T12:01:00Z")
            #expect(instants.allSatisfy { $0 >= start && $0 < start + 600 })
            // Spread over the ten minutes, not bunched: every minute gets some.
            #expect(Set(instants.map { Int(($0 - start) / 60) }).count == 10)
        }
    }

    @Test func outsideItsWindowsAnEventIsDeferredToTheUsersNextOpening() async throws {
        // 21:30 UTC on a Tuesday: 23:30 in Berlin (quiet), 17:30 in New York (open).
        try await Self.withContext(at: "2026-06-02T21:30:00Z", zones: ["ber": "Europe/Berlin", "ny": "America/New_York"]) { context, clock in
            let filter = try await Self.window("quiet: [{start: \"22:00\", end: \"07:00\"}], bypass_field: urgent")
            let night = Event(pipeline: "p", user: "ber", body: [:])
            let hold = try #require(Self.hold(try await filter.apply(to: night, context: context)))
            #expect(hold.kind == .deferred)
            #expect(hold.code == "quiet_hours")
            #expect(hold.until.timeIntervalSince1970 == Self.instant("2026-06-03T05:00:00Z"))
            #expect(hold.reason.contains("Europe/Berlin"))
            #expect(Self.passed(try await filter.apply(to: Event(pipeline: "p", user: "ny", body: [:]), context: context)))
            // A security alert goes at any time.
            #expect(Self.passed(try await filter.apply(to: Event(pipeline: "p", user: "ber", body: ["urgent": true]), context: context)))
            // Back at the opening it waited for, from a daemon whose clock is a second behind: it goes.
            var back = night
            back.holds = [PassedHold(stage: hold.holder, until: hold.until.timeIntervalSince1970)]
            clock.advance(seconds: hold.until.timeIntervalSince1970 - clock.now - 1)
            #expect(Self.passed(try await filter.apply(to: back, context: context)))
            // Not held by it before: judged by the clock (still quiet for a second).
            #expect(Self.hold(try await filter.apply(to: night, context: context)) != nil)
        }
    }

    /// Back from its wait on a daemon whose clock runs a minute ahead of the store's, an event
    /// is judged at the opening it waited for (else two daemons a minute apart pass it back and
    /// forth); back hours later, it is judged by the clock.
    @Test func aReturningEventIsJudgedAtItsOpeningOnAClockALittleAhead() async throws {
        try await Self.withContext(at: "2026-06-01T07:59:00Z") { context, clock in
            let filter = try await Self.window("windows: [{start: \"08:00\", end: \"08:01\"}]")
            let event = Event(pipeline: "p", user: "nobody", body: [:])
            let hold = try #require(Self.hold(try await filter.apply(to: event, context: context)))
            #expect(hold.until.timeIntervalSince1970 == Self.instant("2026-06-01T08:00:00Z"))
            var back = event
            back.holds = [PassedHold(stage: hold.holder, until: hold.until.timeIntervalSince1970)]
            clock.advance(seconds: 120)
            #expect(Self.passed(try await filter.apply(to: back, context: context)), "08:01 on its clock, 08:00 on the store's")
            clock.advance(seconds: 3 * 3600)
            #expect(Self.hold(try await filter.apply(to: back, context: context)) != nil, "back hours later: deferred again")
        }
    }

    static func expectRefusal(_ type: String, _ config: String, _ expected: String?, sourceLocation: Testing.SourceLocation = #_sourceLocation) async
    {
        let found = await refusal(type, config)
        #expect(found == expected, sourceLocation: sourceLocation)
    }

    /// Each refusal names the key and where its value is in the file (line 3 holds the filter).
    /// A user's own quiet hours (a setting) replace the pipeline's for that user; `off` has none.
    @Test func aUsersOwnQuietHoursReplaceThePipelines() async throws {
        // 05:30 UTC: 07:30 in Berlin.
        try await Self.withContext(at: "2026-06-03T05:30:00Z", zones: ["late": "Europe/Berlin", "owl": "Europe/Berlin", "other": "Europe/Berlin"]) {
            context,
            _ in
            try await context.registrations.setSettings(["quiet_hours": "01:00-09:00"], user: "late")
            try await context.registrations.setSettings(["quiet_hours": "off"], user: "owl")
            let filter = try await Self.window("quiet: [{start: \"22:00\", end: \"07:00\"}], holidays: [\"2026-06-04\"]")
            let hold = try #require(Self.hold(try await filter.apply(to: Event(pipeline: "p", user: "late", body: [:]), context: context)))
            #expect(hold.until.timeIntervalSince1970 == Self.instant("2026-06-03T07:00:00Z"), "09:00 in Berlin")
            #expect(Self.passed(try await filter.apply(to: Event(pipeline: "p", user: "owl", body: [:]), context: context)))
            #expect(
                Self.passed(try await filter.apply(to: Event(pipeline: "p", user: "other", body: [:]), context: context)),
                "07:30 is open for the rest"
            )
        }
        // The pipeline's holiday holds for a user with quiet hours off too.
        try await Self.withContext(at: "2026-06-04T10:00:00Z", zones: ["owl": "Europe/Berlin"]) { context, _ in
            try await context.registrations.setSettings(["quiet_hours": "off"], user: "owl")
            let filter = try await Self.window("quiet: [{start: \"22:00\", end: \"07:00\"}], holidays: [\"2026-06-04\"]")
            #expect(Self.hold(try await filter.apply(to: Event(pipeline: "p", user: "owl", body: [:]), context: context)) != nil)
        }
    }

    @Test func aPipelineZoneOrTimeThatIsNotOneIsRefusedAtItsKey() async {
        await Self.expectRefusal("timing.schedule", "delay: 1m, time_zone: Mars/Olympus", "filters[0].time_zone @3:57")
        await Self.expectRefusal("timing.schedule", "delay: 1m, time_zone: GMT+5", "filters[0].time_zone @3:57")
        await Self.expectRefusal("timing.schedule", "local_time: 9am", "filters[0].local_time @3:47")
        await Self.expectRefusal("timing.schedule", "late: never, delay: 1m", "filters[0].late @3:41")
        await Self.expectRefusal("timing.schedule", "jitter: 1d, delay: -1m", "filters[0].delay @3:54")
        await Self.expectRefusal("timing.schedule", "before: 1h", "filters[0].at_field @3:11")
        await Self.expectRefusal("timing.window", "windows: [{start: \"08:00\", end: \"20:00\"}], quiet: []", "filters[0].windows @3:42")
        await Self.expectRefusal("timing.window", "windows: [{start: \"08:00\", end: \"25:00\"}]", "filters[0].windows[0].end @3:65")
        #expect(await Self.refusal("timing.window", "windows: [{days: [mon, funday], start: \"08:00\", end: \"20:00\"}]") != nil)
        await Self.expectRefusal(
            "timing.window",
            "quiet: [{start: \"22:00\", end: \"07:00\"}], holidays: [christmas]",
            "filters[0].holidays[0] @3:85"
        )
        await Self.expectRefusal("timing.window", "quiet: [{start: \"22:00\", end: \"07:00\"}]", String?.none)
    }
}
