import ArgumentParser
import Foundation
import PushPipeCore
import PushPipePostgres
import PushPipeSQLite
import PushPipeTesting

/// Sven's path end to end, as a user sees it: a reply file is closed in the folder → the real
/// daemon (`pushpipe run` on the shipped `sven-replies` pipeline) notices it through inotify,
/// claims it, renders and sends → the APNs stand-in in this process has the request. Files
/// are written at a steady rate, each timed from its close to its request's arrival.
struct ReplyLatencyBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "reply-latency", abstract: "Reply file closed → APNs request received.")

    @Option(help: "Reply files to write.") var files = 1000
    @Option(help: "Files per second.") var rate = 20.0
    @Option(help: "The shipped pipeline file.") var pipeline = "pipelines/sven-replies.yaml"

    func run() async throws {
        let directory = try TemporaryDirectory("pushpipe-reply-bench")
        defer { directory.remove() }
        let (standIn, apnsEnvironment) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "BENCHTEAM1", keyID: "BENCHKEY01")
        try directory.write("pipelines/sven-replies.yaml", try String(contentsOfFile: pipeline, encoding: .utf8))
        let replies = directory.file("replies")
        try FileManager.default.createDirectory(atPath: replies, withIntermediateDirectories: true)
        let environment = apnsEnvironment.merging(["SVEN_REPLY_DIR": replies, "SVEN_BUNDLE_ID": "com.example.sven", "PUSHPIPE_LOG_LEVEL": "notice"]) {
            _,
            new in new
        }
        let arguments = ["run", "--listen", "127.0.0.1:0", "--admin-listen", "off", "--store", "sqlite:state.sqlite", "--plugins", "none"]
        let files = self.files
        let interval = Duration.seconds(1 / rate)
        let closedAt = try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            let registration = try await client.request(
                "POST",
                "/register-apns",
                json: ["device_token": "install-1", "apns_token": .string(String(repeating: "ab", count: 32))]
            )
            guard registration.status == 200 else { throw ValidationError("registration failed: \(registration.text)") }
            // One reply first, so the connection and the provider token exist (a daemon's first send).
            try Self.write(reply: "warm-up", into: replies)
            _ = try await standIn.waitForRequests(1, timeout: 30)
            _ = standIn.takeRequests()
            var closedAt: [String: ContinuousClock.Instant] = [:]
            let start = ContinuousClock.now
            for index in 0..<files {
                try await Task.sleep(until: start + interval * index)
                let id = String(format: "m%06d", index)
                try Self.write(reply: id, into: replies)
                closedAt[id] = ContinuousClock.now
            }
            _ = try await standIn.waitForRequests(files, timeout: 60)
            daemon.signal(SIGTERM)
            _ = try await daemon.waitForExit()
            return closedAt
        }
        await standIn.stop()
        var latencies: [Double] = []
        for request in standIn.requests {
            guard let id = request.body?["message_id"]?.stringValue, let closed = closedAt[id] else { continue }
            let (seconds, attoseconds) = (request.receivedAt - closed).components
            latencies.append(Double(seconds) * 1000 + Double(attoseconds) / 1e15)
        }
        latencies.sort()
        guard latencies.count == files else { throw ValidationError("\(latencies.count) of \(files) replies arrived") }
        func percentile(_ fraction: Double) -> String {
            String(format: "%.1f", latencies[min(latencies.count - 1, Int(Double(latencies.count) * fraction))])
        }
        print(
            "reply latency (file closed → APNs request received), \(files) files at \(rate)/s: p50 \(percentile(0.5)) ms, "
                + "p90 \(percentile(0.9)) ms, p99 \(percentile(0.99)) ms, max \(String(format: "%.1f", latencies.last!)) ms"
        )
    }

    /// Written whole and closed, as the reply step does (inotify reports the close).
    static func write(reply id: String, into folder: String) throws {
        let body = JSON.object(["message_id": .string(id), "text": "Sven says hello; this is a reply of ordinary length."]).compactText
        guard FileManager.default.createFile(atPath: "\(folder)/\(id).json", contents: Data(body.utf8)) else {
            throw ValidationError("cannot write \(folder)/\(id).json")
        }
    }
}
