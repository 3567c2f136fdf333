import Testing

@testable import PushPipeCore

/// A write of what was already sent goes on after its caller's cancellation (the drain
/// timeout), but only for its grace: a stop must end even while the store is away.
@Suite(.timeLimit(.minutes(1))) struct UncancelledTests {
    @Test func theBodyOutlivesItsCallersCancellation() async throws {
        let (started, start) = AsyncStream<Void>.makeStream()
        let (gate, open) = AsyncStream<Void>.makeStream()
        let caller = Task {
            try await uncancelled(until: { .now + .seconds(3600) }) {
                start.yield()
                for await _ in gate { break }
                return Task.isCancelled
            }
        }
        for await _ in started { break }
        caller.cancel()
        open.yield()
        #expect(try await caller.value == false, "the body was not cancelled with its caller")
    }

    @Test func theBodyIsCancelledOnceTheGracePasses() async throws {
        let (started, start) = AsyncStream<Void>.makeStream()
        let caller = Task {
            try await uncancelled(until: { .now + .milliseconds(50) }) {
                start.yield()
                // A store that never comes back.
                try await Task.sleep(for: .seconds(3600))
            }
        }
        for await _ in started { break }
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
    }

    /// The case of an outcome's write: its event was cancelled before the write began.
    @Test func aCallerCancelledBeforeTheCallStillGetsTheBodyRun() async throws {
        let (gate, open) = AsyncStream<Void>.makeStream()
        let caller = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await uncancelled(until: { .now + .seconds(3600) }) {
                for await _ in gate { break }
                return Task.isCancelled
            }
        }
        open.yield()
        #expect(try await caller.value == false)
    }

    /// The writes of one stop share one deadline: the second, cancelled later, gets what is
    /// left of the first's grace, not a grace of its own.
    @Test func theWritesOfAStopShareOneDeadline() async throws {
        let stop = StopDeadline()
        let first = stop.after(.milliseconds(100))
        #expect(stop.after(.seconds(3600)) == first)
        let caller = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await uncancelled(until: { stop.after(.seconds(3600)) }) {
                try await Task.sleep(for: .seconds(3600))
            }
        }
        await #expect(throws: CancellationError.self) { try await caller.value }
    }

    @Test func aBodyThatEndsBeforeItsCallersCancellationReturnsItsResult() async throws {
        #expect(try await uncancelled(until: { .now + .seconds(3600) }) { 42 } == 42)
    }
}
