import NIOCore
import NIOPosix
import PostgresNIO
import PushPipeCore
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
        /// Set when the answer's wait passed, before the connection is closed for it.
        var timedOut: StoreTimeoutError?
    }

    private let state = Mutex(State())
    private let waits: PostgresStore.Waits
    private let store: String
    private let closes: ConnectionCloseWatch

    init(waits: PostgresStore.Waits, store: String, closes: ConnectionCloseWatch) {
        self.waits = waits
        self.store = store
        self.closes = closes
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
                    // The waits start when the statement does: they measure the pool and the
                    // server, not how long a busy machine took to run this task.
                    self.startWaiting()
                    do {
                        let result = try await client.withConnection { connection in
                            self.state.withLock { $0.connection = connection }
                            // Closed under it (the server ended the backend): no answer will come.
                            self.closes.started(on: connection) {
                                self.giveUp(self.state.withLock { $0.timedOut } ?? ConnectionClosedDuringStatement())
                            }
                            defer {
                                self.closes.ended(on: connection)
                                self.state.withLock { $0.connection = nil }
                            }
                            return try await body(connection)
                        }
                        self.finish(.success(result))
                    } catch {
                        self.finish(.failure(error))
                    }
                }
                state.withLock { $0.statement = statement }
            }
        } onCancel: {
            let statement = state.withLock { state -> Task<Void, Never>? in
                if state.continuation == nil { state.finished = true }
                return state.statement
            }
            statement?.cancel()
        }
    }

    private func startWaiting() {
        let loop = MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton.any()
        let timer = loop.scheduleTask(in: TimeAmount(waits.connection)) { self.connectionWaitPassed(on: loop) }
        let ended = state.withLock { state -> Bool in
            if !state.finished { state.timer = timer }
            return state.finished
        }
        if ended { timer.cancel() }
    }

    /// No connection yet: the pool is reconnecting (an outage). With one: the answer's wait starts.
    private func connectionWaitPassed(on loop: any EventLoop) {
        let leased = state.withLock { state -> Bool? in
            guard !state.finished else { return nil }
            guard state.connection != nil else { return false }
            state.timer = loop.scheduleTask(in: TimeAmount(waits.answer)) { self.answerWaitPassed() }
            return true
        }
        if leased == false { giveUp(StoreTimeoutError(store: store, waited: waits.connection, what: "connection")) }
    }

    /// Taken for half-open: its connection is closed (which fails a query that still listens),
    /// then the caller is answered and the statement cancelled.
    private func answerWaitPassed() {
        let timeout = StoreTimeoutError(store: store, waited: waits.connection + waits.answer, what: "answer")
        let connection = state.withLock { state -> PostgresConnection? in
            state.timedOut = timeout
            return state.connection
        }
        guard let connection else {
            giveUp(timeout)
            return
        }
        connection.close().whenComplete { _ in self.giveUp(timeout) }
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

/// The connection a statement ran on closed before its answer came.
struct ConnectionClosedDuringStatement: Error, CustomStringConvertible {
    var description: String { "the connection closed during a statement" }
}
