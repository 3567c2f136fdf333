import Foundation
import Logging
import PostgresNIO
import PushPipePostgresTesting
import PushPipeStores
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipePostgres
@testable import pushpipe

/// A database outage longer than the lease, with real daemons and a real PostgreSQL whose
/// database is taken away (`ALLOW_CONNECTIONS false`) and brought back.
@Suite(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
struct PostgresStoreOutageTests {
    static let token = String(repeating: "ab", count: 32)

    /// Runs `body` with the outage helper running.
    static func withOutage<T: Sendable>(of url: String, _ body: @Sendable (DatabaseOutage) async throws -> T) async throws -> T {
        let outage = try DatabaseOutage(url: url)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await outage.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body(outage)
        }
    }

    /// While the database is away, new events get 503 at once (nothing was stored) instead of
    /// waiting on a pool that reconnects for a minute; the daemon logs the outage once when it
    /// begins and once when it ends; what it accepted before and after is delivered.
    @Test func newEventsGet503WhileTheDatabaseIsAwayAndTheOutageIsLoggedOnce() async throws {
        let directory = try TemporaryDirectory("outage-503")
        defer { directory.remove() }
        let (apns, apnsEnvironment, delivered) = try await SharedDaemonFaultTests.countingAPNs(in: directory) { _ in .accept }
        try directory.write("pipelines/shared.yaml", SharedDatabaseTests.eventPipeline(lease: "2s", delivery: "concurrency: 2"))
        let url = try await TestStores.freshPostgresURL() + "&connect_timeout=1"
        let arguments = ["run", "--listen", "127.0.0.1:0", "--store", url, "--plugins", "none"]
        try await withCleanup(
            {
                try await Self.withOutage(of: url) { outage in
                    let environment = apnsEnvironment.merging(["PUSHPIPE_LOG_LEVEL": "info"]) { _, new in new }
                    try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { daemon in
                        let client = HTTPTestClient(port: try await daemon.port())
                        #expect(
                            try await client.request("POST", "/register", json: ["user_id": "alice", "device_token": .string(Self.token)]).status
                                == 200
                        )
                        #expect(try await client.request("POST", "/events", json: ["user": "alice", "id": "before"]).status == 202)
                        try await outage.begin()
                        var statuses: [Int] = []
                        for number in 0..<5 {
                            let response = try await client.request(
                                "POST",
                                "/events",
                                json: ["user": "alice", "id": .string("during\(number)")],
                                timeout: 60
                            )
                            statuses.append(response.status)
                        }
                        #expect(statuses == Array(repeating: 503, count: 5), "new events while the database is away: \(statuses)")
                        #expect(try await client.request("GET", "/readyz").status == 503, "ready while the database is away")
                        try await outage.end()
                        // Accepted again once the store answers (the next probe finds it back).
                        try await eventually("an event accepted after the outage", timeout: .seconds(60)) {
                            try await client.request("POST", "/events", json: ["user": "alice", "id": "after"]).status == 202
                        }
                        try await delivered.wait(
                            timeout: 60,
                            { $0["before"] != nil && $0["after"] != nil ? () : nil },
                            failure: { WaitTimedOut("delivered: \($0)") }
                        )
                        let lines = daemon.standardError
                        #expect(
                            lines.filter { $0.contains("does not answer") }.count == 1,
                            "the outage's start logged once: \(lines.filter { $0.contains("store") }.suffix(20))"
                        )
                        #expect(lines.filter { $0.contains("answers again") }.count == 1, "its end logged once")
                        // At the default level, nothing else about it: not a line per statement or per reconnection.
                        let loud = lines.filter { $0.contains(" error ") || $0.contains(" warning ") || $0.contains("PSQLError") }
                        #expect(loud.count == 1, "\(loud.joined(separator: "\n"))")
                    }
                }
            },
            cleanup: apns.stop
        )
        #expect(delivered.value.keys.filter { $0.hasPrefix("during") }.isEmpty, "nothing answered 503 was sent")
    }

    /// After a gap in renewals longer than a lease, claims wait until the holders have had time
    /// to renew: an event sent just before the database went away has its outcome and removal
    /// wait for it, its lease lapses meanwhile, and another daemon whose pool comes back first
    /// would otherwise take it over and send it again.
    @Test func anEventInFlightAtAnOutageIsSentOnce() async throws {
        let directory = try TemporaryDirectory("outage-in-flight")
        defer { directory.remove() }
        let first = try TemporaryDirectory("outage-in-flight-a")
        let second = try TemporaryDirectory("outage-in-flight-b")
        defer {
            first.remove()
            second.remove()
        }
        // The first daemon's answer comes while the database is away.
        let (apnsA, environmentA, deliveredA) = try await SharedDaemonFaultTests.countingAPNs(in: first) { _ in .delayed(.seconds(1), .accept) }
        let (apnsB, environmentB, deliveredB) = try await SharedDaemonFaultTests.countingAPNs(in: second) { _ in .accept }
        try directory.write("pipelines/shared.yaml", SharedDatabaseTests.eventPipeline(lease: "2s", delivery: "concurrency: 2"))
        let url = try await TestStores.freshPostgresURL() + "&connect_timeout=1"
        let arguments = ["run", "--listen", "127.0.0.1:0", "--store", url, "--plugins", "none"]
        try await withCleanup(
            {
                try await Self.withOutage(of: url) { outage in
                    try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environmentA) { a in
                        try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environmentB) { b in
                            let client = HTTPTestClient(port: try await a.port())
                            _ = try await b.port()
                            #expect(
                                try await client.request("POST", "/register", json: ["user_id": "alice", "device_token": .string(Self.token)]).status
                                    == 200
                            )
                            #expect(try await client.request("POST", "/events", json: ["user": "alice", "id": "in-flight"]).status == 202)
                            try await deliveredA.wait(timeout: 30, { $0["in-flight"] != nil ? () : nil }, failure: { _ in WaitTimedOut("sent") })
                            try await outage.begin()
                            // Longer than the lease (2 s) and the daemons' waits (1 s): every lease lapses.
                            try await Task.sleep(for: .seconds(6))
                            try await outage.end()
                            // The first daemon records the outcome and removes the event once it is back.
                            do {
                                try await Self.waitUntilQueueEmpty(url: url)
                            } catch {
                                Issue.record(
                                    error,
                                    "first daemon: \(a.standardError.suffix(30).joined(separator: "\n"))\nsecond: \(b.standardError.suffix(15).joined(separator: "\n"))"
                                )
                            }
                            // A takeover would come within the grace that follows the gap.
                            try await Task.sleep(for: .seconds(4))
                        }
                    }
                }
            },
            cleanup: {
                await apnsA.stop()
                await apnsB.stop()
            }
        )
        #expect(deliveredA.value["in-flight"] == 1)
        #expect(deliveredB.value["in-flight"] == nil, "taken over and sent again by the second daemon")
    }

    static func waitUntilQueueEmpty(url: String) async throws {
        guard case .postgres(let location) = try StoreLocation(parsing: url) else { return }
        // The daemons' URL has a 1 s connect timeout, which a loaded machine can outlast just
        // after the outage: the test's own connection tries again.
        let store = try await eventually("a connection after the outage", timeout: .seconds(60)) {
            try await PostgresStore(location: location, logger: Logger(label: "test"))
        }
        do {
            try await eventually("no event queued after the outage", timeout: .seconds(60)) {
                try await store.connections.rows("SELECT count(*) FROM work WHERE kind LIKE 'event:%'").first?.decode(Int.self) == 0
            }
        } catch {
            try await store.close()
            throw error
        }
        try await store.close()
    }

    /// The rule itself, on the database's clock: after nobody renewed for longer than a lease,
    /// a lapsed event is not claimed until the grace that follows the gap has passed.
    /// The first statement after the gap may be a holder's renewal or another daemon's claim,
    /// which starts the grace itself: either way nothing held is taken right after it.
    @Test(arguments: [true, false])
    func claimsWaitAfterAGapInRenewals(renewalFirst: Bool) async throws {
        let location = try await TestStores.freshPostgresDatabase()
        let logger = Logger(label: "test")
        let store = try await PostgresStore(location: location, logger: logger)
        let event = QueuedEvent(
            pipeline: "p",
            source: "sources[0]",
            instance: "a-daemon-cut-off",
            eventID: "e1",
            user: "alice",
            time: 1,
            body: ["id": "e1"],
            lease: .seconds(2)
        )
        try await store.enqueue(event)
        let queue = store.pipeline("p")
        try await queue.renewLeases(source: "sources[0]", keys: [], lease: .seconds(2))
        // Nobody renewed for 100 s (the database was away), and the event's lease lapsed in it.
        try await store.connections.transaction { connection in
            try await connection.query("UPDATE lease_clocks SET renewed_at = renewed_at - 100", logger: logger)
            try await connection.query("UPDATE work SET lease_until = lease_until - 100, due_at = due_at - 100", logger: logger)
        }
        if renewalFirst { try await queue.renewLeases(source: "sources[0]", keys: [], lease: .seconds(2)) }
        #expect(
            try await queue.claimQueuedEvents(source: "sources[0]", lease: .seconds(2), limit: 10).isEmpty,
            "claimed right after the gap: its holder had no time to renew"
        )
        // The grace (the gap's length, at most 90 s) has passed.
        try await store.connections.transaction { connection in
            try await connection.query("UPDATE lease_clocks SET resumed_at = resumed_at - 91", logger: logger)
        }
        #expect(try await store.pipeline("p").claimQueuedEvents(source: "sources[0]", lease: .seconds(2), limit: 10).map(\.eventID) == ["e1"])
        try await store.close()
    }

    /// Every holder of a kind beats one clock row. A lease runs from when its row is written:
    /// counted from the start of a transaction that waited for the clock row longer than the
    /// lease, it would have lapsed already, and another daemon would take over what is still
    /// being sent.
    @Test func aRenewalThatWaitedForTheClockCountsItsLeaseFromTheWrite() async throws {
        let location = try await TestStores.freshPostgresDatabase()
        let logger = Logger(label: "test")
        let store = try await PostgresStore(location: location, logger: logger)
        let event = QueuedEvent(pipeline: "p", source: "s", eventID: "e1", user: "alice", time: 1, body: [:], lease: .seconds(30))
        try await store.enqueue(event)
        let queue = store.pipeline("p")
        try await queue.renewLeases(source: "s", keys: [], lease: .seconds(30))
        let locker = PostgresClient(configuration: location.clientConfiguration, backgroundLogger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await locker.run() }
            let locked = ObservedState(false)
            let unlock = Gate()
            let released = ObservedState<Double?>(nil)
            group.addTask {
                try await locker.withTransaction(logger: logger) { connection in
                    try await connection.query("SELECT 1 FROM lease_clocks FOR UPDATE", logger: logger)
                    locked.update { $0 = true }
                    await unlock.wait()
                    let now = try await connection.query("SELECT extract(epoch from clock_timestamp())::double precision", logger: logger)
                        .collect().first?.decode(Double.self)
                    released.update { $0 = now }
                }
            }
            try await locked.wait(timeout: 10, { $0 ? () : nil }, failure: { _ in WaitTimedOut("the clock row's lock") })
            let renewal = Task { try await queue.renewLeases(source: "s", keys: [event.key], lease: .seconds(30)) }
            try await eventually("the renewal waits for the clock row") {
                // This database's sessions only: other tests share the server.
                try await locker.query(
                    """
                    SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                    """,
                    logger: logger
                ).collect().first?.decode(Int.self) ?? 0 > 0
            }
            unlock.open()
            try await renewal.value
            let release = try #require(released.value)
            let until = try await locker.query("SELECT lease_until FROM work WHERE kind = 'event:s'", logger: logger).collect().first?.decode(
                Double.self
            )
            #expect(try #require(until) >= release + 30, "the lease runs from the write, after the wait: \(until ?? 0) against \(release + 30)")
            group.cancelAll()
        }
        try await store.close()
    }
}
