import Foundation
import Logging
import PushPipeHTTP
import PushPipePlugins
import PushPipeSQLite
import PushPipeTesting
import Testing

@testable import PushPipeCore

/// Plugins run as real child processes: a crash restarts them, a hang times out one event.
@Suite struct PluginProcessTests {
    /// A filter plugin that crashes on `{"crash": true}` and hangs on `{"hang": true}`.
    static let script = """
        import json, sys, time
        print("test plugin started", file=sys.stderr, flush=True)
        for line in sys.stdin:
            request = json.loads(line)
            body = (request.get("event") or {}).get("body") or {}
            if body.get("crash"):
                sys.exit(3)
            if body.get("hang"):
                time.sleep(2.5)
            event = request.get("event")
            if event is not None:
                event["body"]["seen_by_plugin"] = True
                if body.get("pad"):
                    event["body"]["padding"] = "x" * body["pad"]
            print(json.dumps({"id": request["id"], "result": {"event": event}}), flush=True)
        """

    /// - Parameter timeout: generous unless the test is about timeouts: under a loaded test run
    ///   a (re)start of the Python process counts against it.
    func withFilter(timeout: String = "60s", _ body: (any Filter, StageContext, PluginManifest) async throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("flaky/plugin.py", Self.script)
        let manifestFile = try directory.write(
            "flaky/plugin.yaml",
            """
            name: flaky
            kind: filter
            command: [python3, plugin.py]
            timeout: \(timeout)
            """
        )
        let manifest = try PluginManifest.load(file: manifestFile, interpolation: EnvironmentInterpolation(environment: [:])).get()
        let stage = try manifest.descriptor(servedBy: ChildProcessPluginHost()).make(
            configuration: ["type": "flaky"],
            context: StageBuildContext(pipeline: "p", stage: "filters[0]")
        )
        guard case .filter(let filter) = stage, let longRunning = stage.longRunning else {
            Issue.record("a filter plugin must build a long-running filter")
            return
        }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let context = StageContext(
            pipeline: "p",
            stage: "filters[0]",
            store: store,
            logger: Logger(label: "test"),
            mode: .live,
            telemetry: Telemetry.prometheus()
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await longRunning.run(context: context) }
            try await body(filter, context, manifest)
            group.cancelAll()
        }
        try await store.close()
    }

    func event(_ body: JSON) -> Event { Event(pipeline: "p", user: "u", body: body) }

    @Test func answersAreMatchedToRequests() async throws {
        try await withFilter { filter, context, _ in
            let results = try await withThrowingTaskGroup(of: (Int64, JSON?).self) { group in
                for index in Int64(0)..<20 {
                    group.addTask {
                        guard case .pass(let passed) = try await filter.apply(to: self.event(["n": .int(index)]), context: context) else {
                            return (index, nil)
                        }
                        return (index, passed.body)
                    }
                }
                return try await group.reduce(into: [Int64: JSON]()) { $0[$1.0] = $1.1 }
            }
            for index in Int64(0)..<20 { #expect(results[index] == ["n": .int(index), "seen_by_plugin": true]) }
        }
    }

    /// A renderer's answer for a page of 1,000 users is over 128 KB on one line: swift-subprocess's
    /// default line limit made the plugin "fail" and restart, and the broadcast stop, at every page.
    @Test func anAnswerLargerThan128KBOnOneLineIsRead() async throws {
        try await withFilter { filter, context, _ in
            let result = try await filter.apply(to: event(["pad": 400_000]), context: context)
            guard case .pass(let passed) = result else {
                Issue.record("expected the event to pass, got \(result)")
                return
            }
            #expect(passed.body["padding"]?.stringValue?.count == 400_000)
        }
    }

    @Test func crashedPluginIsRestartedAndTheNextEventPasses() async throws {
        try await withFilter { filter, context, _ in
            _ = try await filter.apply(to: event(["warm": true]), context: context)
            await #expect(throws: StageError.self) { try await filter.apply(to: event(["crash": true]), context: context) }
            // The next event waits for the restarted process instead of failing.
            guard case .pass(let passed) = try await filter.apply(to: event(["after": "crash"]), context: context) else {
                Issue.record("the event after a crash must pass through the restarted plugin")
                return
            }
            #expect(passed.body["seen_by_plugin"] == true)
            #expect(
                context.telemetry.exposition().contains(#"pushpipe_plugin_restarts_total{pipeline="p",stage="filters[0]",plugin="flaky"} 1"#),
                "\(context.telemetry.exposition())"
            )
        }
    }

    @Test func unansweredEventTimesOutAndThePipelineGoesOn() async throws {
        try await withFilter(timeout: "1s") { filter, context, manifest in
            #expect(manifest.timeout == .seconds(1))
            do {
                _ = try await filter.apply(to: event(["hang": true]), context: context)
                Issue.record("a hanging plugin must time out")
            } catch let error as StageError {
                #expect(error.code == .pluginTimeout)
            }
            #expect(context.telemetry.exposition().contains(#"pushpipe_plugin_timeouts_total{pipeline="p",stage="filters[0]",plugin="flaky"} 1"#))
            // Once the plugin is done with the slow event it answers the next one again.
            var passed = false
            for _ in 0..<10 where !passed {
                if case .pass = try? await filter.apply(to: event(["after": "timeout"]), context: context) { passed = true }
            }
            #expect(passed)
        }
    }
}
