import ArgumentParser
import Foundation
import Logging
import PostgresNIO
import PushPipeCore
import PushPipePostgres
import PushPipeTesting
import Synchronization

/// The second run of the timing benchmark: the held sends are sent by `daemons` `pushpipe run`
/// processes on one PostgreSQL database, through the APNs stand-in (HTTP/2, TLS, JWTs checked),
/// which notes when each zone's sends arrive.
extension TimingBenchmark {
    /// The pipeline for daemons: APNs through the stand-in, the zone in the payload.
    static let daemonPipeline = """
        pipeline: timing
        sources: [{type: http.event, path: /events}]
        filters: [{type: timing.schedule, at_field: at}]
        renderer: {type: apns.alert, title: Timing, body: "zone {{z}}", custom: {z: {$from: z}}}
        transport:
          type: apns
          team_id: "${APNS_TEAM_ID}"
          key_id: "${APNS_KEY_ID}"
          key_path: "${APNS_KEY_PATH}"
          bundle_id: com.example.timing
          base_url: "${APNS_BASE_URL}"
          ca_file: "${PUSHPIPE_CA_FILE}"
        delivery: {concurrency: 256}
        """

    /// Arrivals per zone at the stand-in: how many, and the last one's time.
    final class Arrivals: Sendable {
        let state: Mutex<(sent: [Int], last: [Double])>
        init(zones: Int) { state = Mutex((Array(repeating: 0, count: zones), Array(repeating: 0, count: zones))) }
        var total: Int { state.withLock { $0.sent.reduce(0, +) } }
        func arrived(zone: Int) {
            let now = Date().timeIntervalSince1970
            state.withLock { state in
                guard state.sent.indices.contains(zone) else { return }
                state.sent[zone] += 1
                state.last[zone] = max(state.last[zone], now)
            }
        }
    }

    /// Runs `daemons` daemons in `directory` until every send arrived (or the deadline); returns
    /// each daemon's peak RSS in MB, read from /proc before it is stopped.
    func sendOnDaemons(_ count: Int, directory: String, environment: [String: String], arrivals: Arrivals) async throws -> [Int] {
        let arguments = [
            "run", "--listen", "127.0.0.1:0", "--admin-listen", "off", "--store", store ?? "sqlite:\(directory)/state.sqlite", "--plugins", "none",
        ]
        let environment = environment.merging(["PUSHPIPE_LOG_LEVEL": "notice"]) { _, new in new }
        let (done, finish) = AsyncStream<Void>.makeStream()
        let peaks = Peaks()
        try await withThrowingTaskGroup(of: Void.self) { group in
            let stops = (0..<count).map { _ in AsyncStream<Void>.makeStream() }
            for index in 0..<count {
                group.addTask {
                    try await DaemonProcess.run(arguments: arguments, directory: directory, environment: environment) { daemon in
                        _ = try await daemon.port()
                        for await _ in stops[index].stream { break }
                        let status = daemon.processIdentifier.flatMap { try? String(contentsOfFile: "/proc/\($0)/status", encoding: .utf8) } ?? ""
                        let kilobytes =
                            status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }.flatMap { Int($0.split(separator: " ")[1]) } ?? 0
                        peaks.add(kilobytes / 1024)
                        daemon.signal(SIGTERM)
                        _ = try await daemon.waitForExit(timeout: 120)
                    }
                }
            }
            group.addTask {
                let deadline = ContinuousClock.now + .seconds(Double(sends) / 200 + 180)
                while arrivals.total < sends, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
                for stop in stops { stop.continuation.finish() }
                finish.finish()
            }
            for await _ in done {}
            try await group.waitForAll()
        }
        return peaks.all
    }

    final class Peaks: Sendable {
        private let values = Mutex([Int]())
        func add(_ value: Int) { values.withLock { $0.append(value) } }
        var all: [Int] { values.withLock { $0 } }
    }

    /// A file's size in MB (SQLite's, with its WAL).
    static func fileSize(_ path: String) -> Int {
        [path, path + "-wal"].compactMap { try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int }.reduce(0, +) / 1_048_576
    }

    /// The database's size in MB.
    static func databaseSize(_ url: String) async throws -> Int {
        let location = try PostgresLocation(parsing: url)
        let client = PostgresClient(configuration: location.clientConfiguration, backgroundLogger: Logger(label: "timing-bench"))
        return try await withThrowingTaskGroup(of: Int?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            let size =
                try await client.query("SELECT pg_database_size(current_database())::bigint", logger: Logger(label: "timing-bench"))
                .collect().first?.decode(Int64.self) ?? 0
            group.cancelAll()
            return Int(size / 1_048_576)
        }
    }
}
