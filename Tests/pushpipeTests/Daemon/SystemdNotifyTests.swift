import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// The daemon under systemd's `Type=notify` (contrib/systemd/pushpipe.service): readiness,
/// reloads and the drain told on the socket `NOTIFY_SOCKET` names, a real datagram socket here.
@Suite struct SystemdNotifyTests {
    static let pipeline = """
        pipeline: notified
        sources: [{type: http.event, path: /events}]
        renderer: {type: json.template, payload: {}}
        transport: {type: stdout}
        """

    /// A daemon on the pipeline above, told to notify `socketPath`'s socket (which is closed after).
    static func withNotifiedDaemon(
        socketPath: (TemporaryDirectory) -> String,
        _ body: @Sendable (DaemonProcess, SystemdNotifySocket, String) async throws -> Void
    ) async throws {
        let directory = try TemporaryDirectory("notify")
        defer { directory.remove() }
        let file = try directory.write("pipelines/notified.yaml", Self.pipeline)
        let notify = try SystemdNotifySocket(path: socketPath(directory))
        try await withCleanup {
            try await DaemonProcess.run(
                arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"],
                directory: directory.path,
                environment: ["NOTIFY_SOCKET": notify.address]
            ) { daemon in try await body(daemon, notify, file) }
        } cleanup: {
            await notify.close()
        }
    }

    /// A path, and a name in Linux's abstract namespace (`@…`), as systemd gives either.
    @Test(arguments: [false, true]) func readyOnceServingThenReloadingAndStopping(abstract: Bool) async throws {
        try await Self.withNotifiedDaemon(socketPath: { abstract ? "@pushpipe-notify-\(UUID().uuidString)" : $0.path + "/notify" }) {
            daemon,
            notify,
            _ in
            let admin = HTTPTestClient(port: try await daemon.adminPort())
            let ready = try await notify.waitForMessage(containing: "READY=1")
            #expect(ready.contains("STATUS=serving 1 pipeline(s)"))
            // Ready as /readyz means it: the pipelines started, not only the listeners.
            let readiness = try await admin.request("GET", "/readyz")
            #expect(readiness.status == 200, "\(readiness.text)")

            daemon.signal(SIGHUP)
            let reloading = try await notify.waitForMessage(containing: "RELOADING=1")
            let microseconds = reloading.split(separator: "\n").first { $0.hasPrefix("MONOTONIC_USEC=") }.flatMap { Int($0.dropFirst(15)) }
            #expect((microseconds ?? 0) > 0, "systemd's notify-reload wants the monotonic time: \(reloading)")
            try await notify.waitForMessage(containing: "READY=1", after: 1)

            daemon.signal(SIGTERM)
            try await notify.waitForMessage(containing: "STOPPING=1")
            #expect(try await daemon.waitForExit() == 0)
            let messages = notify.messages.value
            #expect(messages.firstIndex { $0.contains("RELOADING=1") }! < messages.lastIndex { $0.contains("READY=1") }!)
        }
    }

    /// A reload that fails keeps the daemon serving: systemd hears it is ready again, and why.
    @Test func aRejectedReloadIsReadyWithTheReason() async throws {
        try await Self.withNotifiedDaemon(socketPath: { $0.path + "/notify" }) { daemon, notify, file in
            try await notify.waitForMessage(containing: "READY=1")
            try "pipeline: notified\nsources: [{type: http.event, path: /events}\n".write(toFile: file, atomically: true, encoding: .utf8)
            daemon.signal(SIGHUP)
            let again = try await notify.waitForMessage(containing: "READY=1", after: 1)
            #expect(again.contains("STATUS=reload rejected (1 error(s)); serving the previous configuration"), "\(again)")
            let client = HTTPTestClient(port: try await daemon.port())
            #expect(try await client.request("POST", "/events", json: ["user": "u", "n": 1]).status == 202)
        }
    }

    /// What systemd would never send, and a socket nobody reads: the daemon serves as without one.
    @Test(arguments: ["relative/notify", "/nonexistent/notify", "/" + String(repeating: "x", count: 200), "@"])
    func aBrokenNotifySocketChangesNothing(socket: String) async throws {
        let directory = try TemporaryDirectory("notify")
        defer { directory.remove() }
        try directory.write("pipelines/notified.yaml", Self.pipeline)
        try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"],
            directory: directory.path,
            environment: ["NOTIFY_SOCKET": socket]
        ) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            let accepted = try await client.request("POST", "/events", json: ["user": "u", "n": 1])
            #expect(accepted.status == 202, "\(accepted.text)")
            daemon.signal(SIGHUP)
            let admin = HTTPTestClient(port: try await daemon.adminPort())
            try await eventually("a reload counted on /metrics") {
                prometheusSamples(try await admin.request("GET", "/metrics").text)["pushpipe_reloads_total{result=\"ok\"}"] == 1
            }
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
        }
    }
}
