import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// Plugins are the daemon's children in process groups of their own: a terminal's Ctrl-C is
/// the daemon's to handle (a plugin that got it, such as the example's mute-words plugin, would
/// print a Python `KeyboardInterrupt` traceback and die before the daemon drained), and they
/// still end with it.
@Suite struct PluginProcessGroupTests {
    /// The shipped example (its mute-words plugin in Python), as `pushpipe run` in a terminal.
    static func runExample(_ body: @escaping @Sendable (DaemonProcess, HTTPTestClient) async throws -> Void) async throws {
        let directory = try TemporaryDirectory("plugin-group")
        defer { directory.remove() }
        let root = Repository.root
        try await DaemonProcess.run(
            arguments: [
                "run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", root.appendingPathComponent("plugins.d").path,
                root.appendingPathComponent("pipelines/example.yaml").path,
            ],
            // A quiet window of no length: the built-in window lets the event through at any hour.
            directory: directory.path,
            environment: ["EXAMPLE_QUIET_START": "00:00", "EXAMPLE_QUIET_END": "00:00"],
            ownProcessGroup: true
        ) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            #expect(
                try await client.request(
                    "POST",
                    "/example/register",
                    json: ["user_id": "a", "device_token": .string(String(repeating: "ab", count: 32))]
                ).status == 200
            )
            // An event through the mute-words filter: its plugin is up once the event is processed.
            let accepted = try await client.request(
                "POST",
                "/example/events",
                json: ["user": "a", "title": "t", "message": "m"],
                headers: ["authorization": "Bearer dev-events-token"]
            )
            #expect(accepted.status == 202, "\(accepted.text)")
            let id = try #require(accepted.body?["id"]?.stringValue)
            try await eventually("event \(id)'s record") {
                try StateFile(path: directory.file("state.sqlite")).eventState(id).map { $0 != "accepted" && $0 != "processing" } ?? false
            }
            try await body(daemon, client)
        }
    }

    /// Whether `pid` is gone (or a zombie waiting to be reaped: it runs no more).
    static func isGone(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
    }

    /// Waits until every one of `pids` is gone. They are not this process's children: there is
    /// nothing to await but their end, looked for until a deadline.
    static func waitUntilGone(_ pids: [pid_t]) async throws -> Bool {
        do {
            try await eventually("processes \(pids) to end", timeout: .seconds(20)) { pids.allSatisfy(isGone) }
            return true
        } catch is EventuallyTimeout {
            return false
        }
    }

    /// Ctrl-C: SIGINT to the daemon's whole process group. Only the daemon gets it; it drains,
    /// stops its plugin itself and exits 0, and the plugin printed no traceback.
    @Test func ctrlCReachesTheDaemonAndNotItsPlugins() async throws {
        try await Self.runExample { daemon, _ in
            let plugins = daemon.childProcesses
            #expect(!plugins.isEmpty, "the mute-words plugin runs as the daemon's child")
            daemon.signalProcessGroup(SIGINT)
            let status = try await daemon.waitForExit()
            #expect(status == 0)
            let output = (daemon.standardError + daemon.standardOutput).joined(separator: "\n")
            #expect(!output.contains("KeyboardInterrupt") && !output.contains("Traceback"), "the plugin got no SIGINT: \(output.suffix(1500))")
            #expect(!output.contains("plugin exited"), "the plugin did not die before the daemon stopped it: \(output.suffix(1500))")
            #expect(output.contains("store closed"))
            let gone = try await Self.waitUntilGone(plugins)
            #expect(gone, "the plugin ended with the daemon")
        }
    }

    /// A daemon killed outright cannot stop its plugins: they end on their closed stdin, as
    /// docs/plugins.md asks, and none lives on in its own process group.
    @Test func aKilledDaemonsPluginExits() async throws {
        try await Self.runExample { daemon, _ in
            let plugins = daemon.childProcesses
            #expect(!plugins.isEmpty)
            daemon.signal(SIGKILL)
            let status = try await daemon.waitForExit()
            #expect(status == 128 + SIGKILL)
            let gone = try await Self.waitUntilGone(plugins)
            #expect(gone, "the plugin exited with its daemon")
        }
    }
}

/// What the daemon's environment holds for itself alone does not reach its plugins.
@Suite struct PluginEnvironmentTests {
    @Test func pluginsSeeNeitherTheStoreURLNorTheAdminTokenNorTheNotifySocket() async throws {
        let directory = try TemporaryDirectory("plugin-env")
        defer { directory.remove() }
        let names = ["PUSHPIPE_STORE", "PUSHPIPE_ADMIN_TOKEN", "NOTIFY_SOCKET", "PUSHPIPE_PLUGIN_PROBE"]
        try directory.write(
            "plugins/peek/peek.py",
            """
            import json, os, sys
            print("plugin environment: " + json.dumps({name: name in os.environ for name in \(names)}, sort_keys=True), file=sys.stderr, flush=True)
            for line in sys.stdin:
                request = json.loads(line)
                print(json.dumps({"id": request["id"], "result": {"event": request.get("event")}}), flush=True)
            """
        )
        try directory.write("plugins/peek/plugin.yaml", "name: peek\nkind: filter\ncommand: [python3, peek.py]\n")
        try directory.write(
            "pipelines/peeked.yaml",
            """
            pipeline: peeked
            sources: [{type: http.event, path: /events}]
            filters: [{type: peek}]
            renderer: {type: json.template, payload: {}}
            transport: {type: stdout}
            """
        )
        try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "plugins"],
            directory: directory.path,
            environment: [
                "PUSHPIPE_STORE": "postgres://pushpipe:secret@127.0.0.1:1/unused", "PUSHPIPE_ADMIN_TOKEN": "admin-secret",
                "NOTIFY_SOCKET": directory.path + "/no-socket", "PUSHPIPE_PLUGIN_PROBE": "kept",
            ]
        ) { daemon in
            let line = try await daemon.waitForLine(containing: "plugin environment: ")
            #expect(line.contains(#""NOTIFY_SOCKET": false"#), "\(line)")
            #expect(line.contains(#""PUSHPIPE_ADMIN_TOKEN": false"#), "\(line)")
            #expect(line.contains(#""PUSHPIPE_STORE": false"#), "\(line)")
            #expect(line.contains(#""PUSHPIPE_PLUGIN_PROBE": true"#), "the rest of the environment is the plugin's: \(line)")
        }
    }
}
