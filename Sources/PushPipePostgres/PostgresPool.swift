import Logging
import PostgresNIO
import PushPipeCore
import Synchronization

/// The store's connection pool, run by the store itself, and replaced when it is wedged.
///
/// A pool can stay without connections after a database outage while the database accepts
/// new ones; every statement then fails, and the daemon can neither deliver nor drain. The
/// store cannot see inside the pool; it can see a connection of its own succeed where the
/// pool gives none, and then starts a new pool.
final class PostgresPool: Sendable {
    private struct Current {
        var client: PostgresClient
        var running: Task<Void, Never>
        var since: ContinuousClock.Instant
        /// Pools replaced: stopped, and awaited at shutdown.
        var retired: [Task<Void, Never>] = []
    }

    private let current: Mutex<Current>
    private let make: @Sendable () -> PostgresClient

    init(make: @escaping @Sendable () -> PostgresClient) {
        self.make = make
        let client = make()
        current = Mutex(Current(client: client, running: Self.run(client), since: .now))
    }

    /// Runs a pool until `shutdown`. Detached, and owned here: `PostgresClient.run` ends at a
    /// graceful shutdown it finds in its task's context, and a pool replaced from a pipeline's
    /// task would find the daemon's and close at SIGTERM, while the pipelines still drain and
    /// must record what they deliver.
    private static func run(_ client: PostgresClient) -> Task<Void, Never> {
        Task.detached { await client.run() }
    }

    var client: PostgresClient { current.withLock { $0.client } }

    /// Starts a new pool in place of the current one, unless that one is younger than `age`
    /// (it may still be connecting). Returns whether it did.
    func replace(ifOlderThan age: Duration) -> Bool {
        let retired = current.withLock { current -> Task<Void, Never>? in
            guard .now - current.since >= age else { return nil }
            let client = make()
            let old = current.running
            current.retired.append(old)
            current.client = client
            current.running = Self.run(client)
            current.since = .now
            return old
        }
        retired?.cancel()
        return retired != nil
    }

    /// Stops the pool (its connections close) and waits for every pool it ran.
    func shutdown() async {
        let tasks = current.withLock { [$0.running] + $0.retired }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }
}
