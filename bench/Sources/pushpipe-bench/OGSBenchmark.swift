import ArgumentParser
import Foundation
import Logging
import PushPipeApps
import PushPipeCore
import PushPipePostgres
import PushPipeSQLite
import PushPipeStages

/// One full OGS check of many users: the `ogs.poller` with its default concurrency fetches
/// every user's games, the watermark filter and the alert renderer run, outcomes are
/// recorded; measured until every user's notification completed. Bounded by `--users`.
struct OGSBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ogs", abstract: "Time one full OGS check of many users.")

    @Option(help: "OGS stand-in base URL (127.0.0.1 only).") var baseURL: String
    @Option(help: "Registered users (player ids 1...N).") var users = 10_000
    @Option(help: "Check interval (the check must finish within it).") var interval = 30
    @Option(help: "The store: a new SQLite file by default, or postgres://... (an empty database on 127.0.0.1).") var store: String?

    func validate() throws {
        guard URL(string: baseURL)?.host == "127.0.0.1" else { throw ValidationError("benchmarks only target 127.0.0.1") }
    }

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushpipe-ogs-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = "\(directory)/ogs.yaml"
        // The shipped pipeline's source, filter and renderer; a transport that prints to a
        // discarded stream, so APNs is not what is measured here.
        try """
        pipeline: ogs-bench
        sources:
          - {type: ogs.poller, base_url: "\(baseURL)", interval: \(interval)s}
        filters:
          - {type: dedupe.timestamp, items: games, timestamp: last_move, item_id: game_id}
        renderer:
          type: apns.alert
          title: Online-Go
          body: "{{#single(games)}}It's your turn in: {{games.0.game_name}}{{/single(games)}}\\
            {{#many(games)}}It's your turn in {{games.count}} games{{/many(games)}}"
          badge: {$from: waiting_count}
          custom: {web_url: "https://online-go.com/game/{{games.0.game_id}}", game_ids: {$from: "games[*].game_id"}, action: open_game}
        transport: {type: stdout, format: compact}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let loaded = await ConfigLoader(builtins: BuiltinStages.all + AppStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
            .load(pipelineFiles: [file], pluginsDirectory: nil)
        guard let definition = loaded.pipelines.first else { throw ConfigurationError(loaded.diagnostics) }
        var logger = Logger(label: "ogs-bench")
        logger.logLevel = .error
        let store = try await BenchStore.open(self.store, directory: directory, logger: logger)
        for user in 1...users {
            try await store.pipeline(definition.name).register(
                DeviceToken(user: String(user), kind: "device", value: String(format: "%064x", user)),
                environment: nil,
                replace: false
            )
        }
        let outcomes = OutcomeCounter()
        let runner = PipelineRunner(
            definition: definition,
            store: store,
            logger: logger,
            mode: .live,
            output: OutputSink { _ in },
            onEventCompleted: { outcomes.add($0) }
        )
        let cpuBefore = ProcessUsage.cpuSeconds()
        let start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await runner.run() }
            await outcomes.wait(for: users)
            runner.stop()
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let (delivered, failed) = outcomes.totals
        print(
            String(
                format: "ogs: one check of %d users (5 games each) in %.1f s (interval %d s); %d notified, %d failed; CPU %.2f s; peak RSS %d MB",
                users,
                seconds,
                interval,
                delivered,
                failed,
                ProcessUsage.cpuSeconds() - cpuBefore,
                ProcessUsage.peakRSSMegabytes()
            )
        )
        try await store.close()
    }
}
