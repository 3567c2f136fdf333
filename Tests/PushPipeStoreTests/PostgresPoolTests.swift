import Logging
import PushPipePostgresTesting
import PushPipeTesting
import ServiceLifecycle
import Testing

@testable import PushPipeCore
@testable import PushPipePostgres

/// A pool the store replaced (wedged after an outage) lives until the store closes, not until
/// the daemon's graceful shutdown begins: closed at SIGTERM, it would leave the pipelines
/// still draining unable to record what they had delivered, and another daemon would send it
/// again.
@Suite(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
struct PostgresPoolTests {
    /// Stands for a pipeline: it replaces the pool from its own task, as a statement that found
    /// the pool wedged does, then drains after the graceful shutdown began.
    struct Pipeline: Service {
        let store: PostgresStore
        let replaced = ObservedState(false)
        let drained = ObservedState<String?>(nil)

        func run() async throws {
            #expect(store.connections.pool.replace(ifOlderThan: .zero))
            _ = try await store.connections.rows("SELECT 1")
            replaced.update { $0 = true }
            try? await gracefulShutdown()
            do {
                _ = try await store.connections.rows("SELECT 1")
                drained.update { $0 = "answered" }
            } catch {
                drained.update { $0 = "\(error)" }
            }
        }
    }

    @Test func aReplacedPoolOutlivesTheGracefulShutdown() async throws {
        let location = try await TestStores.freshPostgresDatabase()
        let logger = Logger(label: "test")
        let store = try await PostgresStore(location: location, logger: logger)
        let pipeline = Pipeline(store: store)
        let group = ServiceGroup(services: [pipeline], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await pipeline.replaced.wait(timeout: 30, { $0 ? () : nil }, failure: { _ in WaitTimedOut("the pool was not replaced") })
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(pipeline.drained.value == "answered", "a statement while draining")
        try await store.close()
    }
}
