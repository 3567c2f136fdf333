import ArgumentParser
import Crypto
import Foundation
import Logging
import PushPipeCore
import PushPipeSQLite
import PushPipeStages
import PushPipeTesting

/// Web Push's cost: first the encryption alone (RFC 8291: an ECDH and a key pair per message),
/// then the whole path (`webpush` renderer and transport, VAPID, HTTPS) against a push-service
/// stand-in in another process that answers 201 without checking (`webpush-standin`).
/// Bounded: it stops after `--count`.
struct WebPushBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "webpush", abstract: "Measure the Web Push path against a local stand-in.")

    @Option(help: "Stand-in origin (127.0.0.1 only).") var baseURL = "https://localhost:8463"
    @Option(help: "PEM file of the stand-in's CA.") var caFile: String
    @Option(help: "Notifications to send.") var count = 20_000
    @Option(help: "Messages encrypted alone first.") var encryptions = 20_000
    @Option(help: "Subscriptions the events go to.") var subscriptions = 1000
    @Option(help: "Events in flight (delivery.concurrency).") var concurrency = 256

    func validate() throws {
        try LocalTarget.check(baseURL)
    }

    func run() async throws {
        let message = Data(
            #"{"title":"Your order shipped","body":"\#(String(repeating: "x", count: 120))","data":{"url":"https://shop.example.com/orders/42"}}"#
                .utf8
        )
        let browser = P256.KeyAgreement.PrivateKey()
        let encryption = try WebPushEncryption(p256dh: browser.publicKey.x963Representation, auth: Data(repeating: 7, count: 16))
        var cpuBefore = ProcessUsage.cpuSeconds()
        var start = ContinuousClock.now
        for _ in 0..<encryptions { _ = try encryption.encrypt(message) }
        var cpu = ProcessUsage.cpuSeconds() - cpuBefore
        print(
            String(
                format: "encryption alone: %d messages of %d bytes, %.1f µs CPU each (%.0f/s on one core)",
                encryptions,
                message.count,
                cpu / Double(encryptions) * 1e6,
                Double(encryptions) / seconds(since: start)
            )
        )

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushpipe-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try VAPIDKeyFile.generate(path: "\(directory)/vapid.pem")
        let file = "\(directory)/bench.yaml"
        try """
        pipeline: bench
        sources:
          - {type: http.event, path: /events}
        renderer: {type: webpush, title: "{{title}}", body: "{{text}}", url: "https://shop.example.com/orders/{{n}}"}
        transport: {type: webpush, vapid_key_path: \(directory)/vapid.pem, subject: "mailto:bench@example.com", ca_file: \(caFile)}
        delivery: {concurrency: \(concurrency), attempts: 3, backoff: 10ms}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        // The stand-in is on loopback: allowed by name, as `--allow-private-endpoint` does.
        let loaded = await ConfigLoader(
            builtins: BuiltinStages.all,
            interpolation: EnvironmentInterpolation(environment: [:]),
            egress: EgressPolicy(privateOrigins: [baseURL])
        )
        .load(pipelineFiles: [file], pluginsDirectory: nil)
        guard let definition = loaded.pipelines.first else { throw ConfigurationError(loaded.diagnostics) }
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let store = try SQLiteStore(path: "\(directory)/state.sqlite")
        for index in 0..<subscriptions {
            let key = P256.KeyAgreement.PrivateKey().publicKey.x963Representation.base64URLEncodedString()
            let subscription: JSON = [
                "endpoint": .string("\(baseURL)/push/\(index)"),
                "keys": ["p256dh": .string(key), "auth": .string(Data(repeating: UInt8(index % 256), count: 16).base64URLEncodedString())],
            ]
            try await store.pipeline("bench").register(
                DeviceToken(user: "user\(index)", kind: "webpush", value: subscription.compactText),
                environment: nil,
                replace: false
            )
        }
        let runner = PipelineRunner(definition: definition, store: store, logger: logger, mode: .live)
        let outcomes = OutcomeCounter()
        cpuBefore = ProcessUsage.cpuSeconds()
        start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await runner.run() }
            for n in 0..<count {
                var event = Event(
                    pipeline: "bench",
                    user: "user\(n % subscriptions)",
                    body: ["title": "Your order shipped", "text": "It arrives Friday", "n": .int(Int64(n))]
                )
                event.onComplete = { report in outcomes.add(report) }
                try? await runner.submit(event)
            }
            await outcomes.wait(for: count)
            runner.stop()
        }
        let elapsed = seconds(since: start)
        cpu = ProcessUsage.cpuSeconds() - cpuBefore
        let (delivered, failed) = outcomes.totals
        print(
            String(
                format: "pushpipe webpush: %d notifications in %.2f s = %.0f/s; delivered %d, failed %d; CPU %.2f s (%.0f µs each); peak RSS %d MB",
                count,
                elapsed,
                Double(count) / elapsed,
                delivered,
                failed,
                cpu,
                cpu / Double(count) * 1e6,
                ProcessUsage.peakRSSMegabytes()
            )
        )
        try await store.close()
    }

    func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}

/// The push-service stand-in as its own process: 201 for every message, no checks.
struct WebPushStandInCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webpush-standin",
        abstract: "Serve a push service that accepts everything on 127.0.0.1."
    )

    @Option(help: "Port on 127.0.0.1.") var port: Int
    @Option(help: "Where to write the PEM of its throwaway CA.") var caFile: String
    @Option(help: "Exit after this many seconds (bounded).") var seconds = 900.0
    @Flag(help: "Offer h2 in ALPN, as the browsers' push services do.") var http2 = false

    func run() async throws {
        let authority = try TestCertificateAuthority()
        try authority.writeCACertificate(to: caFile)
        let standIn = try await WebPushStandIn.start(authority: authority, checks: false, port: port, http2: http2)
        FileHandle.standardOutput.write(Data("listening \(standIn.port)\n".utf8))
        try await Task.sleep(for: .seconds(seconds))
        await standIn.stop()
    }
}
