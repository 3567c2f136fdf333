import PushPipeCore
import PushPipeTesting
import Testing

/// The test clock itself: a sleep ends exactly when the clock passes it, not before, and a
/// cancelled sleep ends at once.
@Suite struct ManualClockTests {
    @Test func aSleepEndsWhenTheClockPassesItAndNotBefore() async throws {
        let clock = ManualClock(now: 1000)
        let slept = Task { try await clock.sleep(for: .seconds(30)) }
        try await clock.sleepers(atLeast: 1)
        clock.advance(by: .milliseconds(29_999))
        #expect(clock.sleeping == 1, "29.999 s of a 30 s sleep")
        clock.advance(by: .milliseconds(1))
        try await slept.value
        #expect(clock.sleeping == 0)
        #expect(abs(clock.now - 1030) < 1e-9 && clock.elapsed == .seconds(30))
    }

    @Test func aCancelledSleepThrowsAtOnce() async throws {
        let clock = ManualClock()
        let slept = Task { try await clock.sleep(for: .seconds(3600)) }
        try await clock.sleepers(atLeast: 1)
        slept.cancel()
        await #expect(throws: CancellationError.self) { try await slept.value }
        #expect(clock.sleeping == 0 && clock.elapsed == .zero)
    }

    @Test func advancingMovesOnOnlyWhileSomethingSleeps() async {
        let clock = ManualClock()
        let waited = await clock.advancing(by: .seconds(1)) {
            for _ in 0..<5 { try? await clock.sleep(for: .seconds(2)) }
            return clock.elapsed
        }
        #expect(waited == .seconds(10), "five sleeps of 2 s, in steps of 1 s")
    }

    /// A background loop asleep for an hour does not make `advancing` spin the clock on while
    /// the operation is busy: each step follows a sleep the operation (or anyone) began.
    @Test func aLongSleeperDoesNotMakeAdvancingSpin() async throws {
        let clock = ManualClock()
        let background = Task { try? await clock.sleep(for: .seconds(3600)) }
        try await clock.sleepers(atLeast: 1)
        let waited = await clock.advancing(by: .seconds(1)) {
            try? await clock.sleep(for: .seconds(3))
            return clock.elapsed
        }
        #expect(waited == .seconds(3), "three steps for a sleep of three seconds, none for the background's")
        background.cancel()
        await background.value
    }

    @Test func waitingForASleeperThatNeverComesFails() async {
        let clock = ManualClock()
        await #expect(throws: EventuallyTimeout.self) { try await clock.sleepers(atLeast: 1, within: .milliseconds(50)) }
    }
}
