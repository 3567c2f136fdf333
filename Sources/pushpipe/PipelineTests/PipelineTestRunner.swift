import Foundation
import Logging
import PushPipeCore
import PushPipePlugins
import PushPipeSQLite
import Synchronization

/// Runs `_test.yaml` cases: each case gets a fresh SQLite store seeded with `given`, its
/// event goes through the real filters, renderer and `prepare` of the real transport, and
/// the prepared requests are compared with the expected ones. Nothing is sent.
///
/// Variables come from the test file's `env:` map and the pipeline's own defaults, never from
/// the environment of whoever runs the tests: a case passes or fails the same way on a
/// laptop, in CI and on a machine that runs the daemon with `APNS_BASE_URL` exported.
public struct PipelineTestRunner: Sendable {
    public var builtins: [any Registrable]
    public var pluginsDirectory: String?
    public var logger: Logger

    public init(builtins: [any Registrable], pluginsDirectory: String?, logger: Logger) {
        self.builtins = builtins
        self.pluginsDirectory = pluginsDirectory
        self.logger = logger
    }

    public struct CaseResult: Sendable {
        public var file: String
        public var name: String
        public var failures: [String]
        /// The requests the case's event produced (what a contract test decodes).
        public var requests: [OutgoingRequest]
        public var passed: Bool { failures.isEmpty }
    }

    public func run(testFile: String) async -> Result<[CaseResult], ConfigurationError> {
        let testDefinition: PipelineTestFile
        switch PipelineTestFile.load(testFile, interpolation: EnvironmentInterpolation(environment: [:], allowsUndefined: true)) {
        case .failure(let error): return .failure(error)
        case .success(let loaded): testDefinition = loaded
        }
        let loader = ConfigLoader(
            builtins: builtins,
            interpolation: EnvironmentInterpolation(environment: testDefinition.environment, allowsUndefined: true),
            pluginHost: ChildProcessPluginHost()
        )
        let loaded = await loader.load(pipelineFiles: [testDefinition.pipelineFile], pluginsDirectory: pluginsDirectory)
        guard !loaded.diagnostics.hasErrors, let definition = loaded.pipelines.first else {
            return .failure(ConfigurationError(loaded.diagnostics.errors))
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushpipe-test-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Plugins and other long-running stages run for the whole file, as in the daemon.
        let stageStore: SQLiteStore
        do {
            stageStore = try SQLiteStore(path: "\(directory)/stages.sqlite")
        } catch {
            return .success([CaseResult(file: testFile, name: "store", failures: ["could not create a store: \(error)"], requests: [])])
        }
        let cases = testDefinition.cases
        let given = testDefinition.given
        let results: [CaseResult] =
            (try? await definition.withRunningStages(store: stageStore, logger: logger, mode: .dryRun) { () -> [CaseResult] in
                var results: [CaseResult] = []
                for (index, testCase) in cases.enumerated() {
                    let name = testCase["name"]?.stringValue ?? "case \(index + 1)"
                    let (failures, requests) = await runCase(
                        testCase,
                        given: given,
                        definition: definition,
                        storePath: "\(directory)/case-\(index).sqlite"
                    )
                    results.append(CaseResult(file: testFile, name: name, failures: failures, requests: requests))
                }
                return results
            }) ?? []
        try? await stageStore.close()
        return .success(results)
    }

    func runCase(_ testCase: JSON, given: JSON, definition: PipelineDefinition, storePath: String) async -> ([String], [OutgoingRequest]) {
        do {
            let store = try SQLiteStore(path: storePath)
            try await seed(store, given, pipeline: definition.name)
            try await seed(store, testCase["given"] ?? [:], pipeline: definition.name)
            var event = try EventInput.event(from: testCase["event"] ?? [:], pipeline: definition.name)
            let now = try testCase["now"].map { try EventInput.event(from: ["time": $0], pipeline: definition.name).time } ?? event.time
            let expect = testCase["expect"] ?? [:]
            var (report, sent) = await run(event, at: now.timeIntervalSince1970, definition: definition, store: store)
            var failures = compare(expect, report: report, requests: sent)
            // Held: it comes back at its instant, as the daemon's store would send it back.
            if let then = expect["then"], let until = report.heldUntil, let holder = report.holder {
                event.holds.append(PassedHold(stage: holder, until: until))
                let earlier = sent
                (report, sent) = await run(event, at: until, definition: definition, store: store)
                failures += compare(then, report: report, requests: sent).map { "then: \($0)" }
                sent = earlier + sent
            } else if expect["then"] != nil {
                failures.append("then: the event was not held (\(report.status.rawValue))")
            }
            try await store.close()
            return (failures, sent)
        } catch {
            return (["could not run: \(error)"], [])
        }
    }

    /// Processes `event` with the clock at `now`; returns its report and the requests it made, in token order.
    private func run(_ event: Event, at now: Double, definition: PipelineDefinition, store: SQLiteStore) async -> (EventReport, [OutgoingRequest]) {
        let requests = Mutex<[OutgoingRequest]>([])
        var processor = EventProcessor(
            definition: definition,
            store: store,
            logger: logger,
            mode: .dryRun,
            output: OutputSink { _ in },
            clock: FixedClock(now: now)
        )
        processor.onRequest = { request in requests.withLock { $0.append(request) } }
        let report = await processor.process(event)
        return (report, requests.withLock { $0 }.sorted { ($0.token.user, $0.token.value) < ($1.token.user, $1.token.value) })
    }

    func seed(_ store: SQLiteStore, _ given: JSON, pipeline: String) async throws {
        for registration in given["registrations"]?.arrayValue ?? [] {
            let token = DeviceToken(
                user: registration["user"]?.textValue ?? "",
                kind: registration["kind"]?.stringValue ?? "device",
                value: registration["token"]?.textValue ?? "",
                scope: registration["scope"]?.stringValue ?? ""
            )
            try await store.pipeline(pipeline).register(token, environment: nil, replace: false)
        }
        for setting in given["settings"]?.arrayValue ?? [] {
            try await store.pipeline(pipeline).setSettings(
                [setting["key"]?.stringValue ?? "": setting["value"] ?? .null],
                user: setting["user"]?.textValue ?? ""
            )
        }
        let writes = (given["state"]?.arrayValue ?? []).map {
            StateWrite(stage: $0["stage"]?.stringValue ?? "", key: $0["key"]?.textValue ?? "", value: $0["value"] ?? .null)
        }
        try await store.pipeline(pipeline).setState(writes)
    }

    func compare(_ expect: JSON, report: EventReport, requests: [OutgoingRequest]) -> [String] {
        var failures: [String] = []
        if let status = expect["status"]?.stringValue, status != report.status.rawValue {
            failures.append("status: expected \(status), got \(report.status.rawValue)\(report.reason.map { " (\($0))" } ?? "")")
        }
        if let code = expect["code"]?.stringValue, code != report.code {
            failures.append("code: expected \(code), got \(report.code ?? "none")")
        }
        if let until = expect["held_until"]?.stringValue {
            let expected = EventInput.parseISO8601(until)?.timeIntervalSince1970
            if expected == nil || report.heldUntil.map({ abs($0 - expected!) > 0.0005 }) ?? true {
                failures.append("held_until: expected \(until), got \(report.heldUntil.map(EventRecord.timestamp) ?? "not held")")
            }
        }
        guard let expected = expect["requests"]?.arrayValue else { return failures }
        if expected.count != requests.count {
            failures.append("requests: expected \(expected.count), got \(requests.count)")
        }
        for (index, (want, got)) in zip(expected, requests).enumerated() {
            if let method = want["method"]?.stringValue, method != got.method {
                failures.append("requests[\(index)].method: expected \(method), got \(got.method)")
            }
            if let url = want["url"]?.stringValue, url != got.url {
                failures.append("requests[\(index)].url: expected \(url), got \(got.url)")
            }
            for (name, value) in want["headers"]?.objectValue ?? [:] where got.header(name) != value.stringValue {
                failures.append("requests[\(index)].headers.\(name): expected \(value.stringValue ?? ""), got \(got.header(name) ?? "(absent)")")
            }
            if let body = want["body"], body != got.body {
                failures.append("requests[\(index)].body differs:\n" + Self.diff(expected: body.prettyText, actual: got.body.prettyText))
            }
        }
        return failures
    }

    /// A line diff: `-` expected only, `+` produced only.
    static func diff(expected: String, actual: String) -> String {
        let old = expected.split(separator: "\n", omittingEmptySubsequences: false)
        let new = actual.split(separator: "\n", omittingEmptySubsequences: false)
        var removed: [Int: Substring] = [:]
        var inserted: [Int: Substring] = [:]
        for change in new.difference(from: old) {
            switch change {
            case .remove(let offset, let element, _): removed[offset] = element
            case .insert(let offset, let element, _): inserted[offset] = element
            }
        }
        var lines: [String] = []
        var oldIndex = 0
        var newIndex = 0
        while oldIndex < old.count || newIndex < new.count {
            if let line = removed[oldIndex] {
                lines.append("    - \(line)")
                oldIndex += 1
                continue
            }
            if let line = inserted[newIndex] {
                lines.append("    + \(line)")
                newIndex += 1
                continue
            }
            if oldIndex < old.count { lines.append("      \(old[oldIndex])") }
            oldIndex += 1
            newIndex += 1
        }
        return lines.joined(separator: "\n")
    }
}

/// A case's clock: it stands at the case's `now` (a held event's instant when it comes back),
/// so timing filters decide as they would then, whatever the time the tests run at.
struct FixedClock: DaemonClock {
    let now: Double
    var elapsed: Duration { SystemClock().elapsed }
    func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}
