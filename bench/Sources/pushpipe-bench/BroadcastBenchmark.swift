import ArgumentParser
import Foundation
import Logging
import PushPipeCore
import PushPipePostgres
import PushPipeSQLite
import PushPipeStages

/// One event to every registered user (Sven's replies go to every install): peak memory must
/// not grow with the number of tokens, since the processor renders and delivers one page of
/// users at a time with bounded fan-out. The transport prints to a discarded stream, so the
/// figure is pushpipe's own: rendering, delivery bookkeeping, outcome rows in SQLite.
struct BroadcastBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "broadcast", abstract: "Peak memory of one broadcast to many tokens.")

    @Option(help: "Registered users, one token each.") var tokens = 100_000

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushpipe-broadcast-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = "\(directory)/broadcast.yaml"
        try """
        pipeline: broadcast
        sources: [{type: http.event, path: /events, require_user: false}]
        renderer: {type: apns.alert, title: Sven, body: "{{text}}", custom: {message_id: {$from: message_id}}}
        transport: {type: stdout, format: compact}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let loaded = await ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
            .load(pipelineFiles: [file], pluginsDirectory: nil)
        guard let definition = loaded.pipelines.first else { throw ConfigurationError(loaded.diagnostics) }
        let store = try SQLiteStore(path: "\(directory)/state.sqlite")
        for user in 1...tokens {
            try await store.pipeline(definition.name).register(
                DeviceToken(user: String(format: "install-%07d", user), kind: "device", value: String(format: "%064x", user)),
                environment: nil,
                replace: false
            )
        }
        let registeredRSS = ProcessUsage.peakRSSMegabytes()
        var logger = Logger(label: "broadcast-bench")
        logger.logLevel = .error
        let processor = EventProcessor(definition: definition, store: store, logger: logger, mode: .live, output: OutputSink { _ in })
        let started = ContinuousClock.now
        let cpu = ProcessUsage.cpuSeconds()
        let report = await processor.process(Event(pipeline: definition.name, user: nil, body: ["message_id": "m-1", "text": "to every install"]))
        let elapsed = ContinuousClock.now - started
        let delivered = report.deliveries.count + (report.omittedDeliveries ?? 0)
        try await store.close()
        let size = (try FileManager.default.attributesOfItem(atPath: "\(directory)/state.sqlite")[.size] as? Int) ?? 0
        print(
            "broadcast: \(delivered) of \(tokens) tokens, status \(report.status.rawValue), \(elapsed) "
                + "(\(String(format: "%.1f", ProcessUsage.cpuSeconds() - cpu)) s CPU); peak RSS \(registeredRSS) MB after registering, "
                + "\(ProcessUsage.peakRSSMegabytes()) MB after the broadcast; database \(size / 1_048_576) MB"
        )
    }
}
