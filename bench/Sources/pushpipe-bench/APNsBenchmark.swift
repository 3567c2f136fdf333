import ArgumentParser
import Foundation
import Logging
import OTel
import PushPipeCore
import PushPipePostgres
import PushPipeSQLite
import PushPipeStages
import ServiceLifecycle
import Tracing

#if canImport(Glibc)
import Glibc
#endif

/// Drives the real APNs pipeline path at a stand-in: events are submitted to a
/// `PipelineRunner` (rendered by `apns.alert`, sent by `apns`, outcomes recorded in a
/// SQLite store) as fast as the pipeline accepts them. Bounded: it stops after `--count`.
struct APNsBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "apns", abstract: "Measure pushpipe's APNs path against a local stand-in.")

    @Option(help: "Stand-in base URL (127.0.0.1 only).") var baseURL = "https://localhost:8443"
    @Option(help: "PEM file of the stand-in's CA.") var caFile: String
    @Option(help: "Notifications to send.") var count = 200_000
    @Option(help: "HTTP/2 connections kept open.") var connections = 1
    @Option(help: "Connections open at most (max_connections); the same as --connections when not given: a fixed pool.") var maxConnections: Int?
    @Option(help: "Streams open at once per connection (max_streams).") var maxStreams = 100
    @Option(help: "Events in flight (delivery.concurrency).") var concurrency = 1000
    @Option(help: "Registered devices the events go to.") var devices = 1000
    @Option(help: "Tasks submitting events, each one at a time.") var submitters = 4
    @Option(help: "The store: a new SQLite file by default, or postgres://... (an empty database on 127.0.0.1).") var store: String?
    @Flag(help: "Run each event through a settings.enabled filter (a setting read per event), as the bundled pipelines do.")
    var settingsFilter = false
    @Option(help: "Trace the events, exporting over OTLP/HTTP to this collector (127.0.0.1 only); off by default.") var otlpEndpoint: String?
    @Option(help: "With --otlp-endpoint: the share of events traced (OpenTelemetry's traceidratio sampler).") var traceRatio = 1.0

    func validate() throws {
        try LocalTarget.check(baseURL)
        if let otlpEndpoint, !(otlpEndpoint.hasPrefix("http://127.0.0.1:") || otlpEndpoint.hasPrefix("http://localhost:")) {
            throw ValidationError("--otlp-endpoint: benchmarks only export to this machine (http://127.0.0.1:PORT)")
        }
    }

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushpipe-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A throwaway key: the stand-in checks nothing, but the provider token is made and reused as in production.
        try runOpenSSL(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "\(directory)/sec1.pem"])
        try runOpenSSL(["pkcs8", "-topk8", "-nocrypt", "-in", "\(directory)/sec1.pem", "-out", "\(directory)/AuthKey.p8"])
        let file = "\(directory)/bench.yaml"
        try """
        pipeline: bench
        sources:
          - {type: http.event, path: /events}
        \(settingsFilter ? "filters: [{type: settings.enabled}]" : "")
        renderer:
          type: apns.alert
          title: "{{title}}"
          body: "{{text}}"
          sound: default
          badge: {$from: badge}
          custom: {n: {$from: n}}
        transport:
          type: apns
          team_id: BENCHTEAM1
          key_id: BENCHKEY01
          key_path: \(directory)/AuthKey.p8
          bundle_id: com.example.bench
          base_url: \(baseURL)
          ca_file: \(caFile)
          connections: \(connections)
          max_connections: \(maxConnections ?? connections)
          max_streams: \(maxStreams)
        delivery: {concurrency: \(concurrency), attempts: 3, backoff: 10ms}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let loaded = await ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
            .load(pipelineFiles: [file], pluginsDirectory: nil)
        guard let definition = loaded.pipelines.first else { throw ConfigurationError(loaded.diagnostics) }
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let store = try await BenchStore.open(self.store, directory: directory, logger: logger)
        for index in 0..<devices {
            try await store.pipeline("bench").register(
                DeviceToken(user: "user\(index)", kind: "device", value: String(format: "%064x", index + 1)),
                environment: nil,
                replace: false
            )
        }
        let tracing = try otlpEndpoint.map { try Self.tracing(endpoint: $0, ratio: traceRatio, logger: logger) }
        let exporter = tracing.map { tracing in Task { try await tracing.service.run() } }
        defer { exporter?.cancel() }
        let runner = PipelineRunner(
            definition: definition,
            store: store,
            logger: logger,
            mode: .live,
            telemetry: Telemetry(tracer: tracing?.tracer)
        )
        let outcomes = OutcomeCounter()
        let text = String(repeating: "x", count: 120)
        let cpuBefore = ProcessUsage.cpuSeconds()
        let start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await runner.run() }
            await withTaskGroup(of: Void.self) { producers in
                let producerCount = submitters
                for producer in 0..<producerCount {
                    producers.addTask {
                        for n in stride(from: producer, to: count, by: producerCount) {
                            var event = Event(
                                pipeline: "bench",
                                user: "user\(n % devices)",
                                body: ["title": "Benchmark", "text": .string(text), "badge": 1, "n": .int(Int64(n))]
                            )
                            event.onComplete = { report in outcomes.add(report) }
                            try? await runner.submit(event)
                        }
                    }
                }
            }
            await outcomes.wait(for: count)
            runner.stop()
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let cpu = ProcessUsage.cpuSeconds() - cpuBefore
        let (delivered, failed) = outcomes.totals
        let poolSize = maxConnections.map { "\(connections)-\($0)" } ?? "\(connections)"
        let traced = otlpEndpoint == nil ? "" : String(format: ", traced %.0f%%", traceRatio * 100)
        print(
            "pushpipe (\(self.store != nil ? "PostgreSQL" : "SQLite"), \(ProcessAllocator.name)\(traced)): "
                + String(format: "%d notifications over ", count) + poolSize
                + String(
                    format: " connection(s) in %.2f s = %.0f/s; delivered %d, failed %d; CPU %.2f s (%.3f s per 1000); peak RSS %d MB",
                    seconds,
                    Double(count) / seconds,
                    delivered,
                    failed,
                    cpu,
                    cpu / Double(count) * 1000,
                    ProcessUsage.peakRSSMegabytes()
                )
        )
        try await store.close()
    }

    /// The daemon's exporter (swift-otel, OTLP/HTTP), with a queue that holds a batch's spans at
    /// these rates: what is measured is the cost of tracing, not of spans dropped.
    static func tracing(endpoint: String, ratio: Double, logger: Logger) throws -> (tracer: any Tracer, service: any Service) {
        var configuration = OTel.Configuration.default
        configuration.serviceName = "pushpipe-bench"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.otlpExporter.endpoint = endpoint + "/v1/traces"
        configuration.traces.sampler = try .traceIDRatio(ratio: ratio) ?? { throw ValidationError("--trace-ratio: from 0 to 1") }()
        configuration.traces.batchSpanProcessor.maxQueueSize = 200_000
        configuration.traces.batchSpanProcessor.maxExportBatchSize = 4096
        configuration.traces.batchSpanProcessor.scheduleDelay = .milliseconds(200)
        configuration.diagnosticLogger = .custom(logger)
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        return (backend.factory, backend.service)
    }

    func runOpenSSL(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ValidationError("openssl \(arguments.first ?? "") failed") }
    }

}
