import PushPipeCore
import Synchronization

/// A clock that moves only when the test says so (`advance`): a lease, a backoff or a pause of
/// minutes is tested in no time, and exactly. A test waits for the code under test to be
/// asleep on it (`sleepers(atLeast:)`) before moving it, so nothing depends on timing.
public final class ManualClock: DaemonClock {
    private struct Sleeper {
        var until: Duration
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Double
        var elapsed: Duration = .zero
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
        var watchers: [(id: UInt64, count: Int, continuation: CheckedContinuation<Bool, Never>)] = []

        /// The watchers whose count of sleepers is reached, taken.
        mutating func reachedWatchers() -> [CheckedContinuation<Bool, Never>] {
            let reached = watchers.filter { sleepers.count >= $0.count }.map(\.continuation)
            watchers.removeAll { sleepers.count >= $0.count }
            return reached
        }
    }

    private let state: Mutex<State>

    /// Starts at `now` (UNIX seconds); by default a fixed day in 2027, the same in every run.
    public init(now: Double = 1_800_000_000) {
        state = Mutex(State(now: now))
    }

    public var now: Double { state.withLock { $0.now } }
    public var elapsed: Duration { state.withLock { $0.elapsed } }

    /// Tasks asleep on this clock now.
    public var sleeping: Int { state.withLock { $0.sleepers.count } }

    public func sleep(for duration: Duration) async throws {
        guard duration > .zero else { return try Task.checkCancellation() }
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let watchers = state.withLock { state -> [CheckedContinuation<Bool, Never>]? in
                    guard !Task.isCancelled else { return nil }
                    state.sleepers[id] = Sleeper(until: state.elapsed + duration, continuation: continuation)
                    return state.reachedWatchers()
                }
                guard let watchers else { return continuation.resume(throwing: CancellationError()) }
                watchers.forEach { $0.resume(returning: true) }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock on by `duration`, wall and elapsed alike, and wakes whoever's sleep ended.
    public func advance(by duration: Duration) {
        let woken = state.withLock { state in
            state.elapsed += duration
            state.now += duration / .seconds(1)
            let due = state.sleepers.filter { $0.value.until <= state.elapsed }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.sorted { $0.until < $1.until }.map(\.continuation)
        }
        woken.forEach { $0.resume() }
    }

    public func advance(seconds: Double) {
        advance(by: .seconds(seconds))
    }

    /// Returns once at least `count` tasks sleep on this clock: the code under test reached its
    /// wait. Returns false instead when the waiting task is cancelled.
    @discardableResult
    public func sleepers(atLeast count: Int) async -> Bool {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let reached = state.withLock { state -> Bool? in
                    if Task.isCancelled { return false }
                    if state.sleepers.count >= count { return true }
                    state.watchers.append((id, count, continuation))
                    return nil
                }
                if let reached { continuation.resume(returning: reached) }
            }
        } onCancel: {
            state.withLock { state in
                let index = state.watchers.firstIndex { $0.id == id }
                return index.map { state.watchers.remove(at: $0).continuation }
            }?.resume(returning: false)
        }
    }

    /// Runs `operation`, moving the clock on by `step` each time a task sleeps on it, until the
    /// operation returns: a wait of minutes (a rate, a backoff, a pause) passes in steps, and
    /// the test reads where the clock ended up.
    public func advancing<Result: Sendable>(by step: Duration, _ operation: @escaping @Sendable () async -> Result) async -> Result {
        await withTaskGroup(of: AdvancingEnd<Result>.self) { group in
            group.addTask { .operation(await operation()) }
            group.addTask {
                while await self.sleepers(atLeast: 1) { self.advance(by: step) }
                return .advancing
            }
            var result: Result?
            while let ended = await group.next() {
                if case .operation(let value) = ended {
                    result = value
                    group.cancelAll()
                }
            }
            return result!
        }
    }
}

/// Which task of `ManualClock.advancing` ended.
private enum AdvancingEnd<Result: Sendable>: Sendable {
    case operation(Result)
    case advancing
}
