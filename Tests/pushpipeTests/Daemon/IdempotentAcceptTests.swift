import Crypto
import Foundation
import GRDB
import Logging
import PushPipeCore
import PushPipePostgresTesting
import PushPipeTesting
import Testing

@testable import PushPipePostgres

/// An `http.event` route honours `Idempotency-Key`: a backend that sends an event again (its
/// POST timed out, its daemon was killed) gets the first answer and no second notification.
@Suite(.serialized) struct IdempotentAcceptTests {
    enum StoreKind: String, CaseIterable, Sendable { case sqlite, postgres }

    /// The daemon's arguments for `kind`; nil when there is no PostgreSQL server to test against.
    func arguments(_ kind: StoreKind) async throws -> [String]? {
        switch kind {
        case .sqlite: return AcceptedEventTests.arguments
        case .postgres:
            guard TestStores.postgresURL != nil else { return nil }
            let url = try await TestStores.freshPostgresURL()
            return ["run", "--listen", "127.0.0.1:0", "--store", url, "--plugins", "plugins"]
        }
    }

    static let key = ["Idempotency-Key": "\"order-4711-shipped\""]

    /// Waits until `kind`'s store holds no accepted event: no route shows the queue, so the
    /// store is read beside the daemon (PostgreSQL through a store of the test's own).
    func waitUntilQueueIsEmpty(_ kind: StoreKind, _ arguments: [String], in directory: TemporaryDirectory) async throws {
        switch kind {
        case .sqlite:
            try await eventually("the event to leave the queue") { try await AcceptedEventTests().queued(directory).isEmpty }
        case .postgres:
            let url = try #require(arguments.firstIndex(of: "--store").map { arguments[$0 + 1] })
            let store = try await PostgresStore(location: try PostgresLocation(parsing: url), logger: Logger(label: "test"))
            try await withCleanup(
                {
                    try await eventually("the event to leave the queue") {
                        try await store.connections.rows("SELECT count(*) FROM work WHERE kind LIKE 'event:%'").first?.decode(Int.self) == 0
                    }
                },
                cleanup: { try? await store.close() }
            )
        }
    }

    /// A retried POST after a SIGKILL: the first was stored and answered, its daemon killed while
    /// sending it; the retry to the next daemon gets the same answer, and one notification goes out.
    @Test(arguments: StoreKind.allCases)
    func aRetriedPostAfterASIGKILLGivesOneEventAndOneNotification(_ kind: StoreKind) async throws {
        guard let arguments = try await arguments(kind) else { return }
        let directory = try TemporaryDirectory("idempotent-\(kind)")
        defer { directory.remove() }
        try AcceptedEventTests().writeStuckTransport(directory)
        let file = try directory.write("pipelines/accepted.yaml", AcceptedEventTests.pipeline(transport: "{type: stuck}"))
        let first = try await DaemonProcess.run(arguments: arguments, directory: directory.path) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            let registration: JSON = ["user_id": "u", "device_token": .string(String(repeating: "0f", count: 32))]
            #expect(try await client.request("POST", "/register", json: registration).status == 200)
            let answer = try await client.request("POST", "/events", json: ["user": "u", "n": 7], headers: Self.key)
            #expect(answer.status == 202)
            try await daemon.waitForLine(containing: "sending 7")
            daemon.signal(SIGKILL)
            #expect(try await daemon.waitForExit() == 128 + SIGKILL)
            return answer
        }
        let id = try #require(first.body?["id"]?.stringValue)
        #expect(first.body?["event_id"]?.stringValue == id)

        try AcceptedEventTests.pipeline(transport: "{type: stdout, format: compact}").write(toFile: file, atomically: true, encoding: .utf8)
        try await DaemonProcess.run(arguments: arguments, directory: directory.path) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            let retry = try await client.request("POST", "/events", json: ["user": "u", "n": 7], headers: Self.key)
            #expect(retry.status == 202)
            #expect(retry.body == first.body, "the same answer, with the same event id")
            #expect(retry.headers["idempotent-replayed"] == "true")
            try await daemon.waitForLine(containing: #"of u: {"n":7}"#)
            // No route shows the queue: the store is read beside the daemon.
            try await waitUntilQueueIsEmpty(kind, arguments, in: directory)
            // Once more after the delivery: still the first answer, still nothing sent.
            #expect(try await client.request("POST", "/events", json: ["user": "u", "n": 7], headers: Self.key).body == first.body)
            #expect(daemon.standardOutput.filter { $0.contains(#"{"n":7}"#) }.count == 1)
        }
    }

    /// Another body under a used key is refused, naming the header; a key whose first request is
    /// still being stored gets 409; a malformed key 400; other keys and other credentials are new.
    @Test func aKeyIsForOneRequest() async throws {
        let directory = try TemporaryDirectory("idempotent-rules")
        defer { directory.remove() }
        try directory.write("pipelines/accepted.yaml", AcceptedEventTests.pipeline(transport: "{type: stdout, format: compact}"))
        try await DaemonProcess.run(arguments: AcceptedEventTests.arguments, directory: directory.path) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            let registration: JSON = ["user_id": "u", "device_token": .string(String(repeating: "0f", count: 32))]
            #expect(try await client.request("POST", "/register", json: registration).status == 200)
            let first = try await client.request("POST", "/events", json: ["user": "u", "n": 1], headers: ["Idempotency-Key": "k-1"])
            #expect(first.status == 202)
            let reordered = try await client.request(
                "POST",
                "/events",
                rawBody: #"{ "n": 1,  "user": "u" }"#,
                headers: ["Idempotency-Key": "k-1", "content-type": "application/json"]
            )
            #expect(reordered.status == 202 && reordered.body == first.body, "the same JSON, spaced and ordered otherwise, is the same request")
            let other = try await client.request("POST", "/events", json: ["user": "u", "n": 2], headers: ["Idempotency-Key": "k-1"])
            #expect(other.status == 422)
            #expect(other.body?["field"] == "Idempotency-Key")
            let malformed = try await client.request("POST", "/events", json: ["user": "u", "n": 3], headers: ["Idempotency-Key": "a key"])
            #expect(malformed.status == 400 && malformed.body?["field"] == "Idempotency-Key")
            let second = try await client.request("POST", "/events", json: ["user": "u", "n": 2], headers: ["Idempotency-Key": "k-2"])
            #expect(second.status == 202 && second.body?["id"] != first.body?["id"])

            // A request holding a key (another daemon storing its event) makes the same request wait its turn.
            let fingerprint = SHA256.hash(data: Array(#"{"n":4,"user":"u"}"#.utf8)).map { String(format: "%02x", $0) }.joined()
            // The daemon writes the same file: wait for its lock rather than fail on it.
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            let queue = try DatabaseQueue(path: directory.file("state.sqlite"), configuration: configuration)
            try await queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO idempotency_keys (pipeline, scope, key, fingerprint, held_until, expires_at)
                        VALUES ('accepted', 'POST /events ', 'k-held', ?, ?, ?)
                        """,
                    arguments: [fingerprint, Date().timeIntervalSince1970 + 600, Date().timeIntervalSince1970 + 600]
                )
            }
            try queue.close()
            let held = try await client.request("POST", "/events", json: ["user": "u", "n": 4], headers: ["Idempotency-Key": "k-held"])
            #expect(held.status == 409 && held.body?["field"] == "Idempotency-Key")
            try await daemon.waitForLine(containing: #"of u: {"n":2}"#)
            #expect(daemon.standardOutput.filter { $0.contains(#"{"n":1}"#) }.count == 1)
            #expect(daemon.standardOutput.filter { $0.contains(#"{"n":4}"#) }.isEmpty)
        }
    }
}
