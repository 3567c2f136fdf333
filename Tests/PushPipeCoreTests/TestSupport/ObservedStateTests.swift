import PushPipeTesting
import Testing

/// The wait every stand-in and child-process reader offers a test.
@Suite struct ObservedStateTests {
    /// A cancelled wait ends at once. It used to go on until its deadline, and could park for
    /// ever: its timer ended at once, before the waiter was stored, and with the process it
    /// watched gone no change came to wake it (the chaos soak's harness hung so at its end).
    @Test(.timeLimit(.minutes(1))) func aCancelledWaitEndsAtOnce() async throws {
        let state = ObservedState(0)
        for _ in 0..<200 {
            let waiting = Task { try await state.wait(timeout: 3600, { _ in nil as Int? }, failure: { _ in WaitTimedOut("never") }) }
            waiting.cancel()
            await #expect(throws: CancellationError.self) { try await waiting.value }
        }
    }

    @Test func aChangeWakesTheWaiter() async throws {
        let state = ObservedState(0)
        async let seen = state.wait(timeout: 60, { $0 >= 3 ? $0 : nil }, failure: { WaitTimedOut("saw \($0)") })
        for _ in 0..<3 { state.update { $0 += 1 } }
        #expect(try await seen == 3)
    }
}
