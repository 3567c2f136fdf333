import Foundation
import Logging
import PostgresNIO
import PushPipePostgresTesting
import PushPipeStores
import PushPipeTesting
import Synchronization
import Testing

@testable import PushPipeCore
@testable import PushPipePostgres

/// Every statement of the PostgreSQL store is bounded in time, even one that ignores both the
/// closing of its connection and cancellation: otherwise a pipeline could never finish
/// draining, and SIGTERM would never end its daemon.
@Suite(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
struct BoundedStatementTests {
    /// A statement that never ends, whatever happens to its connection or its task.
    final class Stuck: Sendable {
        private let held = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let entered = ObservedState(false)

        func wait() async {
            await withCheckedContinuation { continuation in
                held.withLock { $0 = continuation }
                entered.update { $0 = true }
            }
        }

        func release() {
            held.withLock { held in
                defer { held = nil }
                return held
            }?.resume()
        }
    }

    @Test func aStatementThatNeverEndsIsGivenUpOnOnceTheWaitsPassed() async throws {
        var location = try await TestStores.freshPostgresDatabase()
        location.statementTimeout = 1
        // A connection may take a while with every suite running at once; the answer's wait is tested.
        location.connectTimeout = 10
        let store = try await PostgresStore(location: location, logger: Logger(label: "test"))
        let stuck = Stuck()
        let outcome = try await withThrowingTaskGroup(of: String.self) { group in
            group.addTask {
                do {
                    try await store.connections.withConnection { _ in await stuck.wait() }
                    return "answered"
                } catch let error as StoreTimeoutError {
                    return error.what
                }
            }
            // statement_timeout (1 s) + 5 s once connected, and a margin for a loaded machine.
            group.addTask {
                try await Task.sleep(for: .seconds(40))
                stuck.release()  // a caller that waits for the statement itself ends only now
                return "still waiting"
            }
            defer { group.cancelAll() }
            return try await group.next() ?? ""
        }
        #expect(outcome == "answer", "the caller is answered with a timeout")
        // The test's own statement may end now; the store closes with it gone.
        try await stuck.entered.wait(timeout: 10, { $0 ? () : nil }, failure: { _ in WaitTimedOut("the statement never started") })
        stuck.release()
        #expect(try await store.connections.rows("SELECT 1").count == 1, "the store goes on with another connection")
        try await store.close()
    }

    /// The server ends the backend under a statement PostgresNIO then leaves waiting: the
    /// caller learns it at the close, not at the answer's bound (35 s by default), which would
    /// hold every outcome write of the daemon meanwhile.
    @Test func aStatementWhoseConnectionTheServerEndsIsAnsweredAtOnce() async throws {
        let url = try await TestStores.freshPostgresURL()
        guard case .postgres(let location) = try StoreLocation(parsing: url) else { return }
        let store = try await PostgresStore(location: location, logger: Logger(label: "test"))
        let outage = try DatabaseOutage(url: url)
        let stuck = Stuck()
        let outcome = try await withThrowingTaskGroup(of: String?.self, returning: String.self) { group in
            group.addTask {
                await outage.run()
                return nil
            }
            group.addTask {
                do {
                    try await store.connections.withConnection { _ in await stuck.wait() }
                    return "answered"
                } catch is StoreUnavailableError {
                    return "unavailable"
                } catch let error as StoreTimeoutError {
                    return "timed out waiting for the \(error.what)"
                }
            }
            group.addTask {
                try await Task.sleep(for: .seconds(20))
                stuck.release()  // a caller that waits for the statement itself ends only now
                return "still waiting"
            }
            defer { group.cancelAll() }
            try await stuck.entered.wait(timeout: 10, { $0 ? () : nil }, failure: { _ in WaitTimedOut("the statement never started") })
            try await outage.terminateBackends()
            while let next = try await group.next() {
                if let outcome = next { return outcome }
            }
            return ""
        }
        #expect(outcome == "unavailable")
        stuck.release()
        try await store.close()
    }
}
