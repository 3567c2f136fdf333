import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// Which build answers, everywhere an operator looks during a rolling upgrade.
@Suite struct BuildInfoTests {
    @Test func theVersionIsInTheCommandTheFirstLinesTheMetricsAndTheStatusPage() async throws {
        let directory = try TemporaryDirectory("version")
        defer { directory.remove() }
        try directory.write("pipelines/versioned.yaml", SystemdNotifyTests.pipeline.replacingOccurrences(of: "notified", with: "versioned"))
        let (status, printed, _) = try await CommandLineTests().pushpipe(["--version"], in: directory)
        #expect(status == 0 && printed == [BuildInfo.version])
        #expect(BuildInfo.version.split(separator: ".").count == 3 && BuildInfo.version.allSatisfy { $0.isNumber || $0 == "." })

        try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"],
            directory: directory.path
        ) { daemon in
            let listening = try await daemon.waitForLine(containing: "listening on http://")
            #expect(listening.contains("version=\(BuildInfo.version)") || listening.contains("\"version\":\"\(BuildInfo.version)\""), "\(listening)")
            let admin = HTTPTestClient(port: try await daemon.adminPort())
            let samples = prometheusSamples(try await admin.request("GET", "/metrics").text)
            let info = samples.filter { $0.key.hasPrefix("pushpipe_build_info{") }
            #expect(info.count == 1 && info.values.first == 1)
            #expect(info.keys.first?.contains("version=\"\(BuildInfo.version)\"") == true, "\(info)")
            #expect(info.keys.first?.contains("allocator=\"\(ProcessAllocator.name)\"") == true, "\(info)")
            #expect(try await admin.request("GET", "/").text.contains("<span class=\"muted\" id=\"version\">\(BuildInfo.version)</span>"))
        }
    }
}
