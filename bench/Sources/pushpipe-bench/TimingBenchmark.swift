import ArgumentParser
import Foundation
import Logging
import PushPipeCore
import PushPipeStages
import PushPipeTesting
import Synchronization

/// Scheduled sends at scale (issue 49): `sends` events held by `timing.schedule` for `zones`
/// instants (one per time zone's 09:00, `gap` apart), each zone's batch due at once. What it
/// shows: memory does not grow with the number waiting (they wait in the store and are
/// claimed as the pipeline has room), and how long after its instant each zone's last send
/// left. The transport prints to a counting sink, so the figures are pushpipe's own.
struct TimingBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "timing", abstract: "Scheduled sends: holding, then sending zone by zone.")

    @Option(help: "Scheduled sends.") var sends = 100_000
    @Option(help: "Zones, each with its own instant.") var zones = 24
    @Option(help: "Seconds between two zones' instants.") var gap = 2.0
    @Option(help: "Users the sends are spread over (one token each).") var users = 2400
    @Option(help: "A PostgreSQL URL on 127.0.0.1 (an empty database); a new SQLite file when omitted.") var store: String?
    @Option(help: "Seconds from the start to the first zone's instant: time to hold every send (default: 1 s per 2,000, plus 10).")
    var lead: Double?
    @Option(help: "Send with this many `pushpipe run` daemons on --store (PostgreSQL) through the APNs stand-in; 0: in this process.")
    var daemons = 0

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushpipe-timing-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard daemons <= 1 || store != nil else { throw ValidationError("--daemons above 1 needs --store, a PostgreSQL database") }
        try FileManager.default.createDirectory(atPath: "\(directory)/pipelines", withIntermediateDirectories: true)
        let file = "\(directory)/pipelines/timing.yaml"
        // With daemons, an APNs stand-in notes each zone's arrivals.
        let arrivals = Arrivals(zones: zones)
        var environment: [String: String] = [:]
        var standIn: APNsStandIn?
        if daemons > 0 {
            let credentials = try TemporaryDirectory("timing-apns")
            let (apns, apnsEnvironment) = try await APNsStandIn.startWithThrowawayCredentials(
                in: credentials,
                teamID: "TIMINGTEAM",
                keyID: "TIMINGKEY1"
            )
            apns.answer { request in
                if let zone = request.body?["z"]?.intValue { arrivals.arrived(zone: Int(zone)) }
                return .accept
            }
            (standIn, environment) = (apns, apnsEnvironment)
        }
        try
            (daemons > 0
            ? Self.daemonPipeline
            : """
            pipeline: timing
            sources: [{type: http.event, path: /events}]
            filters: [{type: timing.schedule, at_field: at}]
            renderer: {type: json.template, payload: {z: {$from: z}}}
            transport: {type: stdout, format: compact}
            delivery: {concurrency: 256}
            """).write(toFile: file, atomically: true, encoding: .utf8)
        let loaded = await ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: environment))
            .load(pipelineFiles: [file], pluginsDirectory: nil)
        guard let definition = loaded.pipelines.first else { throw ConfigurationError(loaded.diagnostics) }
        var logger = Logger(label: "timing-bench")
        logger.logLevel = .error
        let store = try await BenchStore.open(store, directory: directory, logger: logger)
        for user in 0..<users {
            try await store.pipeline("timing").register(
                DeviceToken(user: "u\(user)", kind: "device", value: String(format: "%064x", user + 1)),
                environment: nil,
                replace: false
            )
        }
        // Held first, all of them: the first instant comes once every send is stored.
        let processor = EventProcessor(definition: definition, store: store, logger: logger, mode: .live, output: OutputSink { _ in })
        let holding = ContinuousClock.now
        let start = Date().timeIntervalSince1970 + (lead ?? Double(sends) / 2000 + 10)
        let perTask = (sends + 63) / 64
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<64 {
                group.addTask {
                    for index in (task * perTask)..<min(sends, (task + 1) * perTask) {
                        let zone = index % zones
                        let event = Event(
                            pipeline: "timing",
                            user: "u\(index % users)",
                            body: ["z": .int(Int64(zone)), "at": .double(start + Double(zone) * gap)]
                        )
                        let report = await processor.process(event)
                        guard report.status == .scheduled else { throw ValidationError("event \(index) was \(report.status.rawValue)") }
                    }
                }
            }
            try await group.waitForAll()
        }
        let held = ContinuousClock.now - holding
        let holdingEnded = Date().timeIntervalSince1970
        let heldRSS = ProcessUsage.peakRSSMegabytes()
        if daemons > 0 {
            // The daemons open the state after this process: SQLite's lock is let go. (A
            // PostgreSQL store here was never run as a service, and is left idle.)
            if self.store == nil { try await store.close() }
            let sending = ContinuousClock.now
            let peaks = try await sendOnDaemons(daemons, directory: directory, environment: environment, arrivals: arrivals)
            let elapsed = ContinuousClock.now - sending
            await standIn?.stop()
            let (total, last) = arrivals.state.withLock { ($0.sent.reduce(0, +), $0.last) }
            let lateness = (0..<zones).map { last[$0] - (start + Double($0) * gap) }
            let size: Int
            if let url = self.store { size = try await Self.databaseSize(url) } else { size = Self.fileSize("\(directory)/state.sqlite") }
            print(
                "timing: \(total) of \(sends) sends in \(zones) zones; held in \(held) (first instant \(String(format: "%.1f", start - holdingEnded)) s after) (\(Int(Double(sends) / held.inSeconds))/s), holder's peak RSS \(heldRSS) MB; "
                    + "sent by \(daemons) daemons through the APNs stand-in over \(elapsed) (\(Int(Double(total) / elapsed.inSeconds))/s), their peak RSS \(peaks.sorted().map { "\($0)" }.joined(separator: "/")) MB; "
                    + "last send after its zone's instant: median \(String(format: "%.2f", lateness.sorted()[zones / 2])) s, "
                    + "max \(String(format: "%.2f", lateness.max() ?? 0)) s; \(self.store == nil ? "SQLite file" : "PostgreSQL database") \(size) MB"
            )
            return
        }
        let sent = Mutex([Int](repeating: 0, count: zones))
        let last = Mutex([Double](repeating: 0, count: zones))
        let output = OutputSink { text in
            guard let range = text.range(of: #""z":"#), let zone = Int(text[range.upperBound...].prefix { $0.isNumber }) else { return }
            let now = Date().timeIntervalSince1970
            sent.withLock { $0[zone] += 1 }
            last.withLock { $0[zone] = max($0[zone], now) }
        }
        let runner = PipelineRunner(definition: definition, store: store, logger: logger, mode: .live, output: output)
        let cpu = ProcessUsage.cpuSeconds()
        let sending = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await runner.run() }
            let deadline = ContinuousClock.now + .seconds(Double(sends) / 200 + 120)
            while sent.withLock({ $0.reduce(0, +) }) < sends, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            runner.stop()
            try await group.waitForAll()
        }
        let elapsed = ContinuousClock.now - sending
        let total = sent.withLock { $0.reduce(0, +) }
        let lateness = (0..<zones).map { zone in last.withLock { $0[zone] } - (start + Double(zone) * gap) }
        try await store.close()
        let size = (try? FileManager.default.attributesOfItem(atPath: "\(directory)/state.sqlite")[.size] as? Int) ?? 0
        print(
            "timing: \(total) of \(sends) sends in \(zones) zones; held in \(held) (first instant \(String(format: "%.1f", start - holdingEnded)) s after) (\(Int(Double(sends) / held.inSeconds))/s), peak RSS \(heldRSS) MB; "
                + "sent over \(elapsed) (\(String(format: "%.1f", ProcessUsage.cpuSeconds() - cpu)) s CPU), peak RSS \(ProcessUsage.peakRSSMegabytes()) MB; "
                + "last send after its zone's instant: median \(String(format: "%.2f", lateness.sorted()[zones / 2])) s, "
                + "max \(String(format: "%.2f", lateness.max() ?? 0)) s; "
                + (self.store == nil ? "SQLite file \(size / 1_048_576) MB" : "PostgreSQL")
        )
    }
}
