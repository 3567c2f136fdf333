import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

@testable import PushPipeStages

/// Repeating sends and `late: next`, on a real store with a clock the test moves: each
/// occurrence at the local time (across a change of the clocks), on the days a weekly send
/// names, missed ones skipped or sent once, the last one under the event's own id.
@Suite struct RecurringScheduleTests {
    typealias T = TimingFilterTests

    /// What `result` recurs with: the occurrence's id (nil: none sent now) and the next instant.
    static func recurrence(_ result: FilterResult) -> (occurrence: String?, next: Double)? {
        guard case .recur(let occurrence, let next) = result else { return nil }
        return (occurrence?.id, next.until.timeIntervalSince1970)
    }

    /// `event` back from the schedule's wait that ended at `until`, with the clock there.
    static func back(_ event: Event, until: Double, clock: ManualClock, late: Double = 0) -> Event {
        var back = event
        back.holds = event.holds.filter { $0.stage != ScheduleFilter.holder } + [PassedHold(stage: ScheduleFilter.holder, until: until)]
        clock.advance(seconds: until + late - clock.now)
        return back
    }

    @Test func aDailySendGoesAtItsLocalTimeAcrossAClockChangeUntilItsEnd() async throws {
        // Berlin moves its clocks forward on Sunday 2026-03-29: 09:00 is 08:00Z, then 07:00Z.
        try await T.withContext(at: "2026-03-27T12:00:00Z") { context, clock in
            let filter = try await T.schedule("local_time: \"09:00\", repeat: daily, until_field: ends, time_zone: Europe/Berlin")
            let event = Event(id: "pill", pipeline: "p", user: "nobody", body: ["ends": "2026-03-30T12:00:00+02:00"])
            let first = try #require(T.hold(try await filter.apply(to: event, context: context)))
            #expect(first.until.timeIntervalSince1970 == T.instant("2026-03-28T08:00:00Z"))
            let saturday = try #require(
                Self.recurrence(
                    try await filter.apply(to: Self.back(event, until: T.instant("2026-03-28T08:00:00Z"), clock: clock), context: context)
                )
            )
            #expect(saturday.occurrence == "pill@2026-03-28")
            #expect(saturday.next == T.instant("2026-03-29T07:00:00Z"), "09:00 in summer time")
            let sunday = try #require(
                Self.recurrence(try await filter.apply(to: Self.back(event, until: saturday.next, clock: clock), context: context))
            )
            #expect(sunday.occurrence == "pill@2026-03-29" && sunday.next == T.instant("2026-03-30T07:00:00Z"))
            // Monday's is the last before the end: it goes under the event's own id.
            let last = try await filter.apply(to: Self.back(event, until: sunday.next, clock: clock), context: context)
            guard case .pass(let passed) = last else {
                Issue.record("the last occurrence was not sent: \(last)")
                return
            }
            #expect(passed.id == "pill")
            // An occurrence back from a later filter's wait is sent, not repeated.
            #expect(T.passed(try await filter.apply(to: passed, context: context)))
        }
    }

    @Test func aWeeklySendGoesOnItsDaysOnly() async throws {
        // Tuesday 2026-06-02, in New York.
        try await T.withContext(at: "2026-06-02T15:00:00Z") { context, clock in
            let filter = try await T.schedule("local_time: \"07:30\", repeat: weekly, repeat_days: [mon, wed], time_zone: America/New_York")
            let event = Event(id: "gym", pipeline: "p", user: "nobody", body: [:])
            let first = try #require(T.hold(try await filter.apply(to: event, context: context)))
            #expect(first.until.timeIntervalSince1970 == T.instant("2026-06-03T11:30:00Z"), "Wednesday, not today")
            let wednesday = try #require(
                Self.recurrence(
                    try await filter.apply(to: Self.back(event, until: T.instant("2026-06-03T11:30:00Z"), clock: clock), context: context)
                )
            )
            #expect(wednesday.occurrence == "gym@2026-06-03" && wednesday.next == T.instant("2026-06-08T11:30:00Z"), "then Monday")
            let monday = try #require(
                Self.recurrence(try await filter.apply(to: Self.back(event, until: wednesday.next, clock: clock), context: context))
            )
            #expect(monday.occurrence == "gym@2026-06-08" && monday.next == T.instant("2026-06-10T11:30:00Z"))
            // Weekly without days: the first one's weekday.
            let plain = try await T.schedule("local_time: \"07:30\", repeat: weekly, time_zone: America/New_York")
            let next = try #require(
                Self.recurrence(try await plain.apply(to: Self.back(event, until: T.instant("2026-06-03T11:30:00Z"), clock: clock), context: context))
            )
            #expect(next.next == T.instant("2026-06-10T11:30:00Z"))
        }
    }

    /// Daemons down for three days: the series sends what it missed once (`late: send`) or
    /// skips it (`late: skip`), and goes on from now, not from where it stopped.
    @Test func missedOccurrencesAreSentOnceOrSkippedAndTheSeriesGoesOn() async throws {
        try await T.withContext(at: "2026-06-01T06:00:00Z") { context, clock in
            let event = Event(id: "daily", pipeline: "p", user: "nobody", body: [:])
            let due = T.instant("2026-06-01T07:00:00Z")
            let send = try await T.schedule("local_time: \"09:00\", repeat: daily, time_zone: Europe/Berlin")
            let sent = try #require(
                Self.recurrence(try await send.apply(to: Self.back(event, until: due, clock: clock, late: 3 * 86_400 + 3600), context: context))
            )
            #expect(sent.occurrence == "daily@2026-06-01" && sent.next == T.instant("2026-06-05T07:00:00Z"))
            let skip = try await T.schedule("local_time: \"09:00\", repeat: daily, late: skip, time_zone: Europe/Berlin")
            let skipped = try #require(
                Self.recurrence(try await skip.apply(to: Self.back(event, until: due, clock: clock, late: 3 * 86_400 + 3600), context: context))
            )
            #expect(skipped.occurrence == nil && skipped.next == T.instant("2026-06-05T07:00:00Z"))
            // On time (within `late_after`), it is sent whatever `late` says.
            let onTime = try #require(
                Self.recurrence(try await skip.apply(to: Self.back(event, until: due, clock: clock, late: 30), context: context))
            )
            #expect(onTime.occurrence == "daily@2026-06-01")
        }
    }

    @Test func aPastInstantWaitsForTheNextLocalTimeWhenLateIsNext() async throws {
        try await T.withContext(at: "2026-06-01T12:00:00Z") { context, _ in
            let filter = try await T.schedule("at_field: at, local_time: \"09:00\", late: next, time_zone: Europe/Berlin")
            let past = Event(pipeline: "p", user: "nobody", body: ["at": "2026-05-30T06:00:00Z"])
            let hold = try #require(T.hold(try await filter.apply(to: past, context: context)))
            #expect(hold.until.timeIntervalSince1970 == T.instant("2026-06-02T07:00:00Z"), "tomorrow's 09:00: today's has passed")
            let skip = try await T.schedule("at_field: at, local_time: \"09:00\", late: skip, time_zone: Europe/Berlin")
            #expect(T.dropCode(try await skip.apply(to: past, context: context)) == "late")
        }
    }

    @Test func aRepeatThatCannotBeIsRefusedAtItsKey() async {
        await T.expectRefusal("timing.schedule", "delay: 1h, repeat: daily", "filters[0].repeat @3:54")
        await T.expectRefusal("timing.schedule", "local_time: \"09:00\", repeat: daily, repeat_days: [mon]", "filters[0].repeat_days @3:84")
        await T.expectRefusal("timing.schedule", "local_time: \"09:00\", until_field: ends", "filters[0].until_field @3:69")
        await T.expectRefusal("timing.schedule", "delay: 1h, late: next", "filters[0].late @3:52")
        await T.expectRefusal("timing.schedule", "local_time: \"09:00\", repeat: hourly", "filters[0].repeat @3:64")
    }

    @Test func anEndThatIsNotAnInstantDropsTheEventWithACode() async throws {
        try await T.withContext(at: "2026-06-01T12:00:00Z") { context, _ in
            let filter = try await T.schedule("local_time: \"09:00\", repeat: daily, until_field: ends")
            let event = Event(pipeline: "p", user: "nobody", body: ["ends": "next spring"])
            #expect(T.dropCode(try await filter.apply(to: event, context: context)) == "invalid_time")
            // For every user too (it would repeat for ever), and an end before the first one.
            #expect(
                T.dropCode(try await filter.apply(to: Event(pipeline: "p", user: nil, body: ["ends": "next spring"]), context: context))
                    == "invalid_time"
            )
            let over = Event(pipeline: "p", user: "nobody", body: ["ends": "2026-06-01T13:00:00Z"])
            #expect(T.dropCode(try await filter.apply(to: over, context: context)) == "late", "tomorrow's 09:00 is after its end")
        }
    }

    /// A dead letter's replay failed once its time had come: it goes now, and a replayed
    /// occurrence or zone's copy starts no series or split of its own.
    @Test func aReplayIsSentNowNotScheduledAgain() async throws {
        try await T.withContext(at: "2026-06-01T12:00:00Z") { context, _ in
            let filter = try await T.schedule("local_time: \"09:00\", repeat: daily, late: skip")
            var replay = Event(id: "pill@2026-05-30", pipeline: "p", user: "nobody", body: [:])
            replay.replayOf = EventRecord(pipeline: "p", eventID: replay.id, state: .deadLetter, acceptedAt: 0, updatedAt: 0)
            #expect(T.passed(try await filter.apply(to: replay, context: context)))
        }
    }
}
