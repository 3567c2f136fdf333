import Foundation
import PushPipeTesting
import Testing

/// `pushpipe probe`, the image's HEALTHCHECK: 0 only for a daemon that answers ready.
@Suite struct ProbeCommandTests {
    func probe(_ arguments: [String], in directory: TemporaryDirectory) async throws -> (status: Int32, output: String) {
        let run = try await CommandLineTests().pushpipe(["probe"] + arguments, in: directory)
        return (run.status, (run.output + run.errors).joined(separator: "\n"))
    }

    @Test func readyAndLiveDaemonsPassAndNothingElseDoes() async throws {
        let directory = try TemporaryDirectory("probe")
        defer { directory.remove() }
        try directory.write("pipelines/probed.yaml", SystemdNotifyTests.pipeline)
        try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"],
            directory: directory.path
        ) { daemon in
            let admin = "http://127.0.0.1:\(try await daemon.adminPort())"
            let ready = try await probe(["--admin", admin], in: directory)
            #expect(ready.status == 0 && ready.output.contains("ready"), "\(ready.output)")
            #expect(try await probe(["--admin", admin + "/", "--live"], in: directory).status == 0)
            // The app listener serves health too.
            #expect(try await probe(["--admin", "http://127.0.0.1:\(try await daemon.port())"], in: directory).status == 0)
        }
        // Nothing listens on port 1.
        let closed = try await probe(["--admin", "http://127.0.0.1:1"], in: directory)
        #expect(closed.status == 1 && closed.output.contains("cannot reach"), "\(closed.output)")
    }

    @Test func aServerThatNeverAnswersFailsWithinTheTimeout() async throws {
        let directory = try TemporaryDirectory("probe")
        defer { directory.remove() }
        let server = try await StallingHTTPServer.start()
        try await withCleanup {
            // Ended by its own timeout, with its own exit status and message: a probe that hung
            // would be ended by the test's wait for the exit (30 s) instead. Not timed here: a
            // busy machine takes seconds to start the process.
            let stalled = try await probe(["--admin", server.baseURL, "--timeout", "1"], in: directory)
            #expect(stalled.status == 1 && stalled.output.contains("cannot reach"), "\(stalled.output)")
        } cleanup: {
            await server.stop()
        }
    }

    @Test(arguments: [["--admin", "127.0.0.1:9090"], ["--admin", "ftp://127.0.0.1"], ["--timeout", "0"]])
    func badArgumentsAreRefusedWithoutAsking(arguments: [String]) async throws {
        let directory = try TemporaryDirectory("probe")
        defer { directory.remove() }
        let refused = try await probe(arguments, in: directory)
        #expect(refused.status == 64 && refused.output.contains("--"), "\(refused.output)")
    }
}
