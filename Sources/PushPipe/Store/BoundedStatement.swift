import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// One statement raced against the store's waits: the caller gets the answer, or a timeout
/// once the waits passed, and never waits for the statement's task itself.
///
/// Closing a connection that gave no answer fails its query, as a rule. When it does not (a
/// connection the server cut while the pool handed it out), a caller that waited for the
/// query waited for ever: a group commit's followers with it, a pipeline's drain, and a
/// daemon's stop after SIGTERM. The statement runs in a task of its own, cancelled when the
/// caller is or the waits pass, and left to end by itself if it ignores that.
final class BoundedStatement<Result: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result, any Error>?
        var finished = false
        var connection: PostgresConnection?
        var statement: Task<Void, Never>?
        var timer: Scheduled<Void>?
    }

    private let state = Mutex(State())
    private let waits: PostgresStore.Waits
    private let store: String
    private let logger: Logger

    init(waits: PostgresStore.Waits, store: String, logger: Logger) {
        self.waits = waits
        self.store = store
        self.logger = logger
    }

    func run(on client: PostgresClient, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Result, any Error>) in
                let cancelled = state.withLock { state -> Bool in
                    state.continuation = continuation
                    return state.finished
                }
                if cancelled {
                    finish(.failure(CancellationError()))
                    return
                }
                let statement = Task {
                    do {
                        let result = try await client.withConnection { connection in
                            self.state.withLock { $0.connection = connection }
                            defer { self.state.withLock { $0.connection = nil } }
                            return try await body(connection)
                        }
                        self.finish(.success(result))
                    } catch {
                        self.finish(.failure(error))
                    }
                }
                let loop = MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton.any()
                let timer = loop.scheduleTask(in: TimeAmount(waits.connection)) { self.connectionWaitPassed(on: loop) }
                let ended = state.withLock { state -> Bool in
                    state.statement = statement
                    if !state.finished { state.timer = timer }
                    return state.finished
                }
                if ended { timer.cancel() }
            }
        } onCancel: {
            let statement = state.withLock { state -> Task<Void, Never>? in
                if state.continuation == nil { state.finished = true }
                return state.statement
            }
            statement?.cancel()
        }
    }

    /// No connection yet: the pool is reconnecting (an outage). With one: the answer's wait starts.
    private func connectionWaitPassed(on loop: any EventLoop) {
        let leased = state.withLock { state -> Bool? in
            guard !state.finished else { return nil }
            guard state.connection != nil else { return false }
            state.timer = loop.scheduleTask(in: TimeAmount(waits.answer)) { self.answerWaitPassed(on: loop) }
            return true
        }
        if leased == false { giveUp(StoreTimeoutError(store: store, waited: waits.connection, what: "connection")) }
    }

    /// Taken for half-open: closing the connection fails the query. A second later the caller
    /// is answered whatever the query does.
    private func answerWaitPassed(on loop: any EventLoop) {
        let connection = state.withLock { state -> PostgresConnection? in
            guard !state.finished else { return nil }
            state.timer = loop.scheduleTask(in: .seconds(1)) {
                let waited = self.waits.connection + self.waits.answer
                if self.giveUp(StoreTimeoutError(store: self.store, waited: waited, what: "answer")) {
                    self.logger.warning("store: a statement did not end when its connection was closed; it is left behind")
                }
            }
            return state.connection
        }
        connection?.close().whenComplete { _ in }
    }

    /// Answers the caller with `error` and cancels the statement; false if it had ended.
    @discardableResult
    private func giveUp(_ error: any Error) -> Bool {
        let statement = state.withLock { $0.finished ? nil : $0.statement }
        guard finish(.failure(error)) else { return false }
        statement?.cancel()
        return true
    }

    /// Resumes the caller once; returns whether this call did.
    @discardableResult
    private func finish(_ result: Swift.Result<Result, any Error>) -> Bool {
        let (continuation, timer) = state.withLock { state -> (CheckedContinuation<Result, any Error>?, Scheduled<Void>?) in
            guard !state.finished || state.continuation != nil else { return (nil, nil) }
            state.finished = true
            defer {
                state.continuation = nil
                state.timer = nil
            }
            return (state.continuation, state.timer)
        }
        timer?.cancel()
        guard let continuation else { return false }
        continuation.resume(with: result)
        return true
    }
}
