import Foundation
import GRDB
import PushPipeCore
import PushPipeTesting
import Testing

/// An event answered with 202 is in the store: a daemon killed before delivering it sends it
/// after the restart, once.
@Suite(.serialized) struct AcceptedEventTests {
    static func pipeline(transport: String) -> String {
        """
        pipeline: accepted
        routes:
          - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: device_token}
        sources:
          - {type: http.event, path: /events}
        renderer: {type: json.template, payload: {n: {$from: n}}}
        transport: \(transport)
        """
    }

    static let arguments = ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "plugins"]

    func queued(_ directory: TemporaryDirectory) async throws -> [String] {
        try StateFile(path: directory.file("state.sqlite")).values(
            "SELECT json_extract(payload, '$.body') FROM work WHERE kind LIKE 'event:%' ORDER BY id"
        )
    }

    /// A transport that never answers: it holds the delivery until the daemon is gone.
    func writeStuckTransport(_ directory: TemporaryDirectory) throws {
        try directory.write(
            "plugins/stuck/stuck.py",
            """
            import json, os, sys, time
            parent = os.getppid()
            for line in sys.stdin:
                request = json.loads(line)
                if request["type"] == "send":
                    print("sending %s" % request["request"]["body"]["n"], file=sys.stderr, flush=True)
                    while os.getppid() == parent:
                        time.sleep(0.05)
                    sys.exit(0)
                print(json.dumps({"id": request["id"], "result": {"outcome": "delivered"}}), flush=True)
            """
        )
        try directory.write("plugins/stuck/plugin.yaml", "name: stuck\nkind: transport\ncommand: [python3, stuck.py]\n")
    }

    /// A daemon accepts event `n: 7` for user `u`, starts sending it to a transport that never
    /// answers, and is killed: the event stays queued. Returns the pipeline file.
    func acceptThenKill(in directory: TemporaryDirectory) async throws -> String {
        try writeStuckTransport(directory)
        let file = try directory.write("pipelines/accepted.yaml", Self.pipeline(transport: "{type: stuck}"))
        try await DaemonProcess.run(arguments: Self.arguments, directory: directory.path) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            let registration: JSON = ["user_id": "u", "device_token": .string(String(repeating: "0f", count: 32))]
            #expect(try await client.request("POST", "/register", json: registration).status == 200)
            #expect(try await client.request("POST", "/events", json: ["user": "u", "n": 7]).status == 202)
            #expect(try await queued(directory) == [#"{"n":7,"user":"u"}"#], "in the store before the answer")
            try await daemon.waitForLine(containing: "sending 7")
            daemon.signal(SIGKILL)
            #expect(try await daemon.waitForExit() == 128 + SIGKILL)
        }
        return file
    }

    @Test func anEventAcceptedBeforeSIGKILLIsSentAfterTheRestart() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try await acceptThenKill(in: directory)

        try Self.pipeline(transport: "{type: stdout, format: compact}").write(toFile: file, atomically: true, encoding: .utf8)
        try await DaemonProcess.run(arguments: Self.arguments, directory: directory.path) { daemon in
            // The stdout transport's line is the notification sent.
            try await daemon.waitForLine(containing: #"of u: {"n":7}"#)
            try await eventually("the sent event to leave the queue") { try await queued(directory).isEmpty }
            #expect(daemon.standardOutput.filter { $0.contains(#"{"n":7}"#) }.count == 1)
            // Operators see it as a recovered event.
            let metrics = try await AdminListenerTests.scrape(HTTPTestClient(port: try await daemon.adminPort()))
            #expect(metrics[#"pushpipe_events_recovered_total{pipeline="accepted",stage="sources[0]"}"#] == 1)
        }
    }

    /// A source's queued events are kept under its key (its type here), not its position: a
    /// source added before it leaves them where it finds them (under the position they would
    /// wait under `sources[0]` for a source that is now `sources[1]`). Events
    /// queued by an earlier version under the position move to the key; events no pipeline's
    /// source will claim are reported at the start.
    @Test func queuedEventsFollowTheirSourceWhenThePipelineChanges() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try await acceptThenKill(in: directory)
        // An earlier version's row (keyed by position) and one of a pipeline since renamed.
        let queue = try DatabaseQueue(path: directory.file("state.sqlite"))
        try await queue.write { db in
            for (pipeline, source, n) in [("accepted", "sources[1]", 8), ("renamed-away", "http.event", 9)] {
                try db.execute(
                    sql: """
                        INSERT INTO work (pipeline, kind, key, due_at, owner, lease_until, payload, created_at)
                        VALUES (?, ?, ?, 0, 'a-process-long-gone', 0, ?, 0)
                        """,
                    arguments: [
                        pipeline, QueuedEvent.kind(source: source), "e\(n)\nq",
                        #"{"event_id":"e\#(n)","user":"u","time":0,"body":{"n":\#(n),"user":"u"}}"#,
                    ]
                )
            }
        }
        try queue.close()
        let replies = try TemporaryDirectory("replies")
        defer { replies.remove() }
        try Self.pipeline(transport: "{type: stdout, format: compact}")
            .replacingOccurrences(of: "sources:\n", with: "sources:\n  - {type: reply.folder, path: \(replies.path)}\n")
            .write(toFile: file, atomically: true, encoding: .utf8)
        try await DaemonProcess.run(arguments: Self.arguments, directory: directory.path) { daemon in
            try await daemon.waitForLine(containing: #"of u: {"n":7}"#)
            try await daemon.waitForLine(containing: #"of u: {"n":8}"#)
            // The operator is told of what no source will claim: the warning is what is tested.
            try await daemon.waitForLine(containing: "1 accepted events of pipeline 'renamed-away' wait for a source keyed 'http.event'")
            try await eventually("only the renamed pipeline's event to wait") { try await queued(directory) == [#"{"n":9,"user":"u"}"#] }
            #expect(daemon.standardOutput.filter { $0.contains(#"{"n":9}"#) }.isEmpty)
        }
    }

    /// Past the drain timeout a stopping daemon cancels deliveries; their events stay queued.
    @Test func anEventCancelledAtTheDrainTimeoutStaysQueued() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try writeStuckTransport(directory)
        try directory.write("pipelines/accepted.yaml", Self.pipeline(transport: "{type: stuck}\ndelivery: {drain_timeout: 200ms}"))
        try await DaemonProcess.run(arguments: Self.arguments, directory: directory.path) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            let registration: JSON = ["user_id": "u", "device_token": .string(String(repeating: "0f", count: 32))]
            #expect(try await client.request("POST", "/register", json: registration).status == 200)
            #expect(try await client.request("POST", "/events", json: ["user": "u", "n": 8]).status == 202)
            try await daemon.waitForLine(containing: "sending 8")
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
            #expect(daemon.standardError.contains { $0.contains("drain timeout") }, "it waited for the drain, which ran out")
        }
        #expect(try await queued(directory) == [#"{"n":8,"user":"u"}"#])
    }
}
