import Foundation
import Logging
import PushPipeCore
import PushPipePostgres
import PushPipePostgresTesting
import PushPipeStores
import PushPipeTesting
import Testing

@testable import pushpipe

/// The scale-out guarantees under faults: each test creates one condition with real daemons.
@Suite struct SharedDaemonFaultTests {
    static let postgres = Testing.ConditionTrait.enabled(
        if: TestStores.postgresURL != nil,
        "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"
    )

    /// An APNs stand-in that counts, per event id, the requests it accepted.
    static func countingAPNs(
        in directory: TemporaryDirectory,
        field: String = "id",
        answer: @escaping @Sendable (String) -> APNsStandIn.Answer
    ) async throws
        -> (APNsStandIn, [String: String], ObservedState<[String: Int]>)
    {
        let (apns, environment) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "FAULTTEAM1", keyID: "FAULTKEY01")
        let delivered = ObservedState([String: Int]())
        apns.answer { request in
            guard let id = request.body?[field]?.stringValue else { return .accept }
            delivered.update { $0[id, default: 0] += 1 }
            return answer(id)
        }
        return (apns, environment, delivered)
    }

    static func duplicates(_ counts: [String: Int]) -> [String] {
        counts.filter { $0.value > 1 }.keys.sorted()
    }

    /// Waits until `count` ids were delivered, then `settle` more: what a lapsed lease or a
    /// returned claim would send twice goes out within a lease or two.
    static func waitForDeliveries(
        _ delivered: ObservedState<[String: Int]>,
        count: Int,
        settle: Duration,
        saying detail: @escaping () -> String = { "" }
    ) async throws {
        try await delivered.wait(
            timeout: 60,
            { $0.count >= count ? () : nil },
            failure: { WaitTimedOut("\($0.count) of \(count) delivered\(detail())") }
        )
        try await Task.sleep(for: settle)
    }

    static func expectEachDeliveredOnce(_ delivered: ObservedState<[String: Int]>, count: Int) {
        #expect(delivered.value.count == count, "every one delivered")
        #expect(duplicates(delivered.value).isEmpty, "none twice: \(duplicates(delivered.value))")
    }

    static let registration: JSON = ["user_id": "alice", "device_token": .string(String(repeating: "ab", count: 32))]

    /// `rename()` keeps a file's modification time, so another daemon's sweep must not take a
    /// reply written long ago for abandoned as soon as it is claimed, before its owner's first
    /// touch, and send it twice. Replies written an hour before they are claimed, two
    /// daemons on the folder, APNs answering slowly: each reply is sent once.
    @Test func oldRepliesInASharedFolderAreSentOnce() async throws {
        let directory = try TemporaryDirectory("old-replies")
        defer { directory.remove() }
        let (apns, apnsEnvironment, delivered) = try await Self.countingAPNs(in: directory, field: "message_id") { _ in
            .delayed(.seconds(1.5), .accept)
        }
        try directory.write("pipelines/replies.yaml", SharedReplyFolderTests.replyPipeline(claimLease: "1s", concurrency: 2))
        try FileManager.default.createDirectory(atPath: directory.file("replies"), withIntermediateDirectories: true)
        let environment = apnsEnvironment.merging(["REPLY_DIR": directory.file("replies")]) { _, new in new }
        let run = { @Sendable (state: String, body: @Sendable @escaping (DaemonProcess) async throws -> Void) in
            try await DaemonProcess.run(
                arguments: ["run", "--listen", "127.0.0.1:0", "--state", state, "--plugins", "none"],
                directory: directory.path,
                environment: environment
            ) { try await body($0) }
        }
        let replies = 8
        try await withCleanup(
            {
                try await run("a.sqlite") { first in
                    try await run("b.sqlite") { second in
                        try await SharedReplyFolderTests.registerInstall(with: [first, second])
                        let anHourAgo = Date().addingTimeInterval(-3600)
                        for number in 0..<replies {
                            let staged = try directory.write("staging/r\(number).json", #"{"message_id": "m\#(number)", "text": "reply"}"#)
                            try FileManager.default.setAttributes([.modificationDate: anHourAgo], ofItemAtPath: staged)
                            try FileManager.default.moveItem(atPath: staged, toPath: directory.file("replies/r\(number).json"))
                        }
                        try await Self.waitForDeliveries(delivered, count: replies, settle: .zero)
                        // Each moves to sent/ after its answer; a reply taken back for abandoned would go out again meanwhile.
                        let sent = { (try? FileManager.default.contentsOfDirectory(atPath: directory.file("replies/sent")))?.count ?? 0 }
                        try await eventually("every reply in sent/") { sent() >= replies }
                        #expect(sent() == replies, "every reply in sent/")
                        try await Task.sleep(for: .seconds(2))
                    }
                }
            },
            cleanup: apns.stop
        )
        Self.expectEachDeliveredOnce(delivered, count: replies)
    }

    /// A daemon that claims left-over events keeps their leases while submissions wait for a
    /// full pipeline, or they would lapse while it still holds the events and the other daemon
    /// would take them over: duplicates. 40 events left by a dead daemon, two daemons with room
    /// for two events each, APNs taking 0.5 s per answer.
    @Test(postgres) func claimsUnderBackpressureKeepTheirLeases() async throws {
        let directory = try TemporaryDirectory("backpressure")
        defer { directory.remove() }
        let (apns, apnsEnvironment, delivered) = try await Self.countingAPNs(in: directory) { _ in .delayed(.seconds(0.5), .accept) }
        try directory.write("pipelines/shared.yaml", SharedDatabaseTests.eventPipeline(lease: "1s", delivery: "concurrency: 2, drain_timeout: 1s"))
        let url = try await TestStores.freshPostgresURL()
        let store = try await StoreLocation(parsing: url).open(logger: Logger(label: "test"))
        let events = 40
        for number in 0..<events {
            try await store.enqueue(
                QueuedEvent(
                    pipeline: "shared",
                    source: "sources[0]",
                    instance: "a-daemon-that-died",
                    eventID: "e\(number)",
                    user: "alice",
                    time: 1,
                    body: ["user": "alice", "id": .string("e\(number)")]
                )
            )
        }
        try await store.pipeline("shared").register(
            DeviceToken(user: "alice", kind: "device", value: String(repeating: "ab", count: 32)),
            environment: nil,
            replace: false
        )
        try await store.close()
        let arguments = ["run", "--listen", "127.0.0.1:0", "--store", url, "--plugins", "none"]
        try await withCleanup(
            {
                try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: apnsEnvironment) { first in
                    _ = try await first.port()
                    try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: apnsEnvironment) { second in
                        _ = try await second.port()
                        try await Self.waitForDeliveries(delivered, count: events, settle: .seconds(3))
                    }
                }
            },
            cleanup: apns.stop
        )
        Self.expectEachDeliveredOnce(delivered, count: events)
    }

    /// An event cancelled at the drain timeout of a SIGHUP reload stays queued under this
    /// process's name, and claims skip this process's own events, so nobody would send it until
    /// a restart. It must go out again within a bounded time.
    @Test func anEventCancelledByAReloadIsSentAgain() async throws {
        let directory = try TemporaryDirectory("reload-drain")
        defer { directory.remove() }
        let firstAttempt = ObservedState(true)
        let (apns, apnsEnvironment, delivered) = try await Self.countingAPNs(in: directory) { _ in
            // The first attempt outlasts the drain timeout, however slow the reload; the next are answered at once.
            firstAttempt.update { first in
                defer { first = false }
                return first
            } ? .delayed(.seconds(120), .accept) : .accept
        }
        let pipeline = { @Sendable (title: String) in
            SharedDatabaseTests.eventPipeline(name: "reloaded", title: title, lease: "1s", delivery: "concurrency: 2, drain_timeout: 1s, attempts: 1")
        }
        try directory.write("pipelines/reloaded.yaml", pipeline("Before"))
        try await withCleanup(
            {
                try await DaemonProcess.run(
                    arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"],
                    directory: directory.path,
                    environment: apnsEnvironment
                ) { daemon in
                    let client = HTTPTestClient(port: try await daemon.port())
                    #expect(try await client.request("POST", "/register", json: Self.registration).status == 200)
                    #expect(try await client.request("POST", "/events", json: ["user": "alice", "id": "stranded"]).status == 202)
                    try await delivered.wait(timeout: 30, { $0["stranded"] != nil ? () : nil }, failure: { _ in WaitTimedOut("first attempt") })
                    try directory.write("pipelines/reloaded.yaml", pipeline("After"))
                    daemon.signal(SIGHUP)
                    try await delivered.wait(
                        timeout: 20,
                        { ($0["stranded"] ?? 0) >= 2 ? () : nil },
                        failure: { WaitTimedOut("the cancelled event was not sent again: \($0)") }
                    )
                }
            },
            cleanup: apns.stop
        )
    }

    /// Shared time is the database's, not each daemon's own clock: a daemon 60 s ahead would
    /// see every other daemon's lease as long expired and take over events still being
    /// delivered. The skewed daemon (under Debian's `faketime`) takes nothing live.
    @Test(postgres, .enabled(if: FakeTime.isInstalled, "Debian's faketime is not installed"))
    func aDaemonWithASkewedClockTakesNoLiveEvents() async throws {
        let directory = try TemporaryDirectory("skewed-clock")
        defer { directory.remove() }
        let (apns, apnsEnvironment, delivered) = try await Self.countingAPNs(in: directory) { _ in .delayed(.seconds(0.4), .accept) }
        try directory.write("pipelines/shared.yaml", SharedDatabaseTests.eventPipeline(lease: "2s", delivery: "concurrency: 1, drain_timeout: 1s"))
        let url = try await TestStores.freshPostgresURL()
        let arguments = ["run", "--listen", "127.0.0.1:0", "--store", url, "--plugins", "none"]
        let events = 12
        try await withCleanup(
            {
                try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: apnsEnvironment) { first in
                    let client = HTTPTestClient(port: try await first.port())
                    try await DaemonProcess.run(
                        arguments: arguments,
                        directory: directory.path,
                        environment: apnsEnvironment,
                        launcher: FakeTime.launcher(offset: "+60s")
                    ) { ahead in
                        _ = try await ahead.port()
                        // Its log's timestamps are its clock: a minute ahead.
                        let stamp = try #require(ahead.standardError.first.flatMap { ISO8601DateFormatter().date(from: String($0.prefix(24))) })
                        #expect(stamp.timeIntervalSinceNow > 45, "the daemon's clock is ahead: \(stamp)")
                        #expect(try await client.request("POST", "/register", json: Self.registration).status == 200)
                        // Both take events: the skewed one must deliver its own, and take nobody else's.
                        let clients = [client, HTTPTestClient(port: try await ahead.port())]
                        try await withThrowingTaskGroup(of: Int.self) { group in
                            for number in 0..<events {
                                group.addTask {
                                    try await clients[number % 2].request("POST", "/events", json: ["user": "alice", "id": .string("e\(number)")])
                                        .status
                                }
                            }
                            for try await status in group { #expect(status == 202) }
                        }
                        try await Self.waitForDeliveries(delivered, count: events, settle: .seconds(2)) {
                            "; the skewed daemon said: \(ahead.standardError.filter { !$0.contains(" debug ") }.suffix(15))"
                        }
                    }
                }
            },
            cleanup: apns.stop
        )
        Self.expectEachDeliveredOnce(delivered, count: events)
    }

    /// A second daemon on one machine fails on the admin listener's default port with an error
    /// that names the listener and the flag, not a bare `bind(...): Address already in use`.
    @Test func aTakenAdminPortNamesTheAdminListener() async throws {
        let directory = try TemporaryDirectory("admin-port")
        defer { directory.remove() }
        try directory.write(
            "pipelines/example.yaml",
            """
            pipeline: example
            sources:
              - {type: http.event, path: /events}
            renderer: {type: json.template, payload: {text: "{{text}}"}}
            transport: {type: stdout}
            """
        )
        try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "a.sqlite", "--plugins", "none", "--dry-run"],
            directory: directory.path
        ) { first in
            let admin = try await first.adminPort()
            try await DaemonProcess.run(
                arguments: [
                    "run", "--listen", "127.0.0.1:0", "--state", "b.sqlite", "--plugins", "none", "--dry-run",
                    "--admin-listen", "127.0.0.1:\(admin)",
                ],
                directory: directory.path
            ) { second in
                let status = try await second.waitForExit()
                #expect(status != 0)
                let output = (second.standardError + second.standardOutput).joined(separator: "\n")
                #expect(
                    output.contains("admin listener") && output.contains("--admin-listen") && output.contains("127.0.0.1:\(admin)"),
                    "the error names the admin listener, its address and the flag: \(output.suffix(600))"
                )
            }
        }
    }
}
