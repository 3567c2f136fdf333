import PushPipeCore
import Synchronization

/// A clock that moves only when the test says so (`advance`): a lease, a backoff or a pause of
/// minutes is tested in no time, and exactly. A test waits for the code under test to be
/// asleep on it (`sleepers(atLeast:)`) before moving it, so nothing depends on timing.
public final class ManualClock: DaemonClock {
    private struct Sleeper {
        var until: Duration
        /// Which sleep it is, counted from the clock's start (`State.sleeps` when it began).
        var order: Int
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Double
        var elapsed: Duration = .zero
        var sleepers: [UInt64: Sleeper] = [:]
        /// Sleeps begun so far, woken or not: `advancing` steps only after a new one.
        var sleeps = 0
        var nextID: UInt64 = 0
        var watchers: [Watcher] = []

        /// The watchers whose wait is over, taken.
        mutating func reachedWatchers() -> [CheckedContinuation<Bool, Never>] {
            let reached = watchers.filter(isReached).map(\.continuation)
            watchers.removeAll(where: isReached)
            return reached
        }

        func isReached(_ watcher: Watcher) -> Bool {
            sleepers.count >= watcher.sleepers && (watcher.newerThan.map { order in sleepers.values.contains { $0.order > order } } ?? true)
        }
    }

    private struct Watcher {
        var id: UInt64
        /// Tasks asleep at least, one of them begun after sleep number `newerThan` if given.
        var sleepers: Int
        var newerThan: Int?
        var continuation: CheckedContinuation<Bool, Never>
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
        let id = nextIdentifier()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let watchers = state.withLock { state -> [CheckedContinuation<Bool, Never>]? in
                    guard !Task.isCancelled else { return nil }
                    state.sleeps += 1
                    state.sleepers[id] = Sleeper(until: state.elapsed + duration, order: state.sleeps, continuation: continuation)
                    return state.reachedWatchers()
                }
                guard let watchers else { return continuation.resume(throwing: CancellationError()) }
                for watcher in watchers { watcher.resume(returning: true) }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// A sleeper's or a watcher's handle, for its cancellation to find it.
    private func nextIdentifier() -> UInt64 {
        state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
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
        for continuation in woken { continuation.resume() }
    }

    public func advance(seconds: Double) {
        advance(by: .seconds(seconds))
    }

    /// Returns once at least `count` tasks sleep on this clock: the code under test reached its
    /// wait. Throws when that takes longer than `timeout` of real time: a test whose code never
    /// waits fails instead of hanging.
    public func sleepers(atLeast count: Int, within timeout: Duration = .seconds(30)) async throws {
        let reached = await finished(within: timeout) { await self.until(sleepers: count) } ?? false
        guard reached else { throw EventuallyTimeout(what: "\(count) tasks asleep on the test clock (\(sleeping) are)", timeout: timeout) }
    }

    /// Returns true once `count` tasks are asleep, one of them begun after sleep number
    /// `newerThan` if given; false when cancelled.
    private func until(sleepers count: Int, newerThan: Int? = nil) async -> Bool {
        let id = nextIdentifier()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let reached = state.withLock { state -> Bool? in
                    if Task.isCancelled { return false }
                    let watcher = Watcher(id: id, sleepers: count, newerThan: newerThan, continuation: continuation)
                    if state.isReached(watcher) { return true }
                    state.watchers.append(watcher)
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

    /// Runs `operation`, moving the clock on by `step` while a sleep begun since it started is
    /// asleep on the clock, until the operation returns: a wait of minutes (a rate, a backoff, a
    /// pause) passes in steps, and the test reads where the clock ended up. A task that was
    /// asleep before (a background loop) moves nothing on while the operation is busy.
    public func advancing<Result: Sendable>(by step: Duration, _ operation: @escaping @Sendable () async -> Result) async -> Result {
        let before = state.withLock { $0.sleeps }
        return await withTaskGroup(of: AdvancingEnd<Result>.self) { group in
            group.addTask { .operation(await operation()) }
            group.addTask {
                while await self.until(sleepers: 1, newerThan: before) { self.advance(by: step) }
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
