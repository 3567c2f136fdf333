import Foundation
import GRDB
import PushPipeCore
import PushPipeSQLite
import PushPipeTesting
import Testing

/// A mistaken second `pushpipe run` on the same `--state` stops at the state lock: otherwise
/// it would claim the first daemon's in-flight event (SQLite gives another process's events to
/// a claim at once) before it exits for the busy port, and the push service would see two sends.
@Suite struct StateLockTests {
    /// A pipeline whose source is keyed `inbox`, sending through `transport`.
    static func pipeline(transport: String) -> String {
        """
        pipeline: locked
        routes:
          - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: device_token}
        sources:
          - {type: http.event, path: /events, key: inbox}
        renderer: {type: json.template, payload: {n: {$from: n}}}
        transport: {type: \(transport)}
        """
    }

    /// A transport plugin that writes each send to `sends.log` (whichever daemon runs it) and
    /// holds it in flight until the file `release` exists.
    static func holdingTransport(in directory: TemporaryDirectory) throws {
        try directory.write(
            "plugins/holding/holding.py",
            """
            import json, os, sys, time
            for line in sys.stdin:
                request = json.loads(line)
                if request["type"] == "send":
                    n = request["request"]["body"]["n"]
                    with open(\(String(reflecting: directory.file("sends.log"))), "a") as sends:
                        sends.write("%s by %d\\n" % (n, os.getppid()))
                    print("sending %s" % n, file=sys.stderr, flush=True)
                    parent = os.getppid()
                    while not os.path.exists(\(String(reflecting: directory.file("release")))):
                        if os.getppid() != parent:
                            sys.exit(0)  # the daemon is gone: outlive no test
                        time.sleep(0.02)
                print(json.dumps({"id": request["id"], "result": {"outcome": "delivered"}}), flush=True)
            """
        )
        // Held for as long as the test takes (a loaded machine starts its daemons slowly): past
        // the default 5 s the daemon would time the send out and make it again.
        try directory.write("plugins/holding/plugin.yaml", "name: holding\nkind: transport\ncommand: [python3, holding.py]\ntimeout: 300\n")
        try directory.write("pipelines/locked.yaml", pipeline(transport: "holding"))
    }

    static func sends(in directory: TemporaryDirectory) -> [String] {
        ((try? String(contentsOfFile: directory.file("sends.log"), encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    static let registration: JSON = ["user_id": "a", "device_token": .string(String(repeating: "ab", count: 32))]

    /// The first daemon holds an event in flight (its transport does not answer yet). A second
    /// `pushpipe run` on the same state, on another port and on the first one's, exits 1 naming
    /// the first daemon's pid, and the event is sent once. Without the lock the second daemon
    /// on another port would run and send the event again.
    @Test func aSecondDaemonOnTheSameStateExitsNamingTheFirstAndSendsNothing() async throws {
        let directory = try TemporaryDirectory("state-lock")
        defer { directory.remove() }
        try Self.holdingTransport(in: directory)
        let arguments = { @Sendable (listen: String) in ["run", "--listen", listen, "--state", "var/state.sqlite", "--plugins", "plugins"] }
        try await DaemonProcess.run(arguments: arguments("127.0.0.1:0"), directory: directory.path) { first in
            let port = try await first.port()
            let client = HTTPTestClient(port: port)
            #expect(try await client.request("POST", "/register", json: Self.registration).status == 200)
            let accepted = try await client.request("POST", "/events", json: ["user": "a", "n": 1])
            #expect(accepted.status == 202)
            let held = try #require(accepted.body?["id"]?.stringValue)
            try await first.waitForLine(containing: "sending 1")
            let firstPID = try #require(first.processIdentifier)

            for listen in ["127.0.0.1:0", "127.0.0.1:\(port)"] {
                try await DaemonProcess.run(arguments: arguments(listen), directory: directory.path) { second in
                    let status = try await second.waitForExit()
                    #expect(status == 1, "a second daemon on the state does not start (--listen \(listen))")
                    let refusal = second.standardError.joined(separator: "\n")
                    #expect(
                        refusal.contains("pid \(firstPID)") && refusal.contains("state_in_use") && refusal.contains("var/state.sqlite"),
                        "the error names the state and the daemon holding it: \(refusal.suffix(600))"
                    )
                }
            }
            #expect(FileManager.default.fileExists(atPath: directory.file("var/state.sqlite.lock")))

            FileManager.default.createFile(atPath: directory.file("release"), contents: nil)
            try await eventually("event \(held) to leave the queue") { try StateFile(path: directory.file("var/state.sqlite")).queuedEvents == 0 }
            first.signal(SIGTERM)
            #expect(try await first.waitForExit() == 0)
        }
        #expect(Self.sends(in: directory).count == 1, "the push service saw one send: \(Self.sends(in: directory))")

        // The lock died with its daemon: the next one starts on the state.
        try await DaemonProcess.run(arguments: arguments("127.0.0.1:0"), directory: directory.path) { next in
            _ = try await next.port()
        }
    }

    /// Events an earlier daemon left in the state wait for the next one. A daemon whose app or
    /// admin port is taken exits 1 without having claimed any: its pipelines start only once
    /// every listener listens.
    @Test(arguments: ["app", "admin"])
    func aDaemonWhosePortIsTakenExitsWithoutClaimingQueuedEvents(listener: String) async throws {
        let directory = try TemporaryDirectory("port-taken")
        defer { directory.remove() }
        try directory.write("pipelines/locked.yaml", Self.pipeline(transport: "stdout"))
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        for n in 0..<3 {
            try await store.enqueue(
                QueuedEvent(
                    pipeline: "locked",
                    source: "inbox",
                    instance: "an-earlier-daemon",
                    eventID: "left-\(n)",
                    user: "a",
                    time: Date().timeIntervalSince1970,
                    body: ["n": .int(Int64(n))],
                    lease: .seconds(0)
                )
            )
        }
        try await store.close()

        // Another daemon, on a state of its own, has the ports.
        try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "other.sqlite", "--plugins", "none"],
            directory: directory.path
        ) { blocker in
            let taken =
                listener == "app"
                ? ["--listen", "127.0.0.1:\(try await blocker.port())", "--admin-listen", "127.0.0.1:0"]
                : ["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:\(try await blocker.adminPort())"]
            try await DaemonProcess.run(arguments: ["run", "--state", "state.sqlite", "--plugins", "none"] + taken, directory: directory.path) {
                daemon in
                let status = try await daemon.waitForExit()
                #expect(status == 1)
                let output = daemon.standardError.joined(separator: "\n")
                #expect(output.contains("\(listener) listener cannot listen"), "\(output.suffix(600))")
                #expect(!output.contains("sending"), "no queued event was started: \(output.suffix(600))")
            }
        }
        let queue = try DatabaseQueue(path: directory.file("state.sqlite"))
        let owners = try await queue.read { db in
            try Optional<String>.fetchAll(db, sql: "SELECT owner FROM work WHERE kind LIKE 'event:%' ORDER BY id")
        }
        #expect(owners == [nil, nil, nil], "every queued event is let go of (the earlier daemon is gone), none claimed: \(owners)")
    }

    /// The lock is the daemon's alone: a dry run (on a snapshot of the state) and the commands
    /// that read the state work while a daemon runs on it.
    @Test func dryRunAndReadsWorkWhileADaemonRuns() async throws {
        let directory = try TemporaryDirectory("state-lock-reads")
        defer { directory.remove() }
        try directory.write("pipelines/locked.yaml", Self.pipeline(transport: "stdout"))
        try directory.write("event.json", #"{"user": "a", "body": {"n": 7}}"#)
        try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"],
            directory: directory.path
        ) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            #expect(try await client.request("POST", "/register", json: Self.registration).status == 200)
            let commands = [
                ["dry-run", "locked", "--pipelines", "pipelines", "--plugins", "none", "--state", "state.sqlite", "--event", "event.json"],
                ["dead-letters", "list", "--state", "state.sqlite"],
                ["events", "show", "nothing-here", "--state", "state.sqlite"],
            ]
            for command in commands {
                try await DaemonProcess.run(arguments: command, directory: directory.path) { reader in
                    let status = try await reader.waitForExit()
                    let output = (reader.standardOutput + reader.standardError).joined(separator: "\n")
                    #expect(!output.contains("state_in_use"), "\(command[0]) is not refused: \(output.suffix(600))")
                    if command[0] == "dry-run" {
                        #expect(status == 0)
                        #expect(
                            output.contains("result: delivered") && output.contains("of a: rendered"),
                            "the dry run read the registration: \(output.suffix(600))"
                        )
                    } else if command[0] == "dead-letters" {
                        #expect(status == 0 && output.contains("no dead letters"), "\(output.suffix(600))")
                    } else {
                        #expect(status == 1 && output.contains("no event nothing-here"), "\(output.suffix(600))")
                    }
                }
            }
            // And the daemon still runs on its state.
            #expect(try await client.request("POST", "/events", json: ["user": "a", "n": 8]).status == 202)
        }
    }
}
