import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// The daemon says which `malloc` it runs on: a build with the `jemalloc` trait and one
/// without look the same from outside, and only one of them is the production build.
@Suite struct ProcessAllocatorTests {
    /// Debian's libjemalloc2 (`.ci/run` installs it); the same library the trait links.
    static let jemalloc = ["/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2"]
        .first { FileManager.default.fileExists(atPath: $0) }

    static func listeningLine(environment: [String: String]) async throws -> String {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "pipelines/plain.yaml",
            """
            pipeline: plain
            sources: [{type: http.event, path: /events}]
            renderer: {type: json.template, payload: {}}
            transport: {type: stdout}
            """
        )
        return try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"],
            directory: directory.path,
            environment: environment
        ) { daemon in
            let line = try await daemon.waitForLine(containing: "listening on http:")
            daemon.signal(SIGTERM)
            _ = try await daemon.waitForExit()
            return line
        }
    }

    #if os(Linux)
    @Test func aBuildWithoutTheTraitRunsOnGlibc() async throws {
        #expect(ProcessAllocator.name == "glibc")
        #expect(try await Self.listeningLine(environment: [:]).contains("allocator=glibc"))
    }

    @Test(.enabled(if: jemalloc != nil, "needs Debian's libjemalloc2"))
    func jemallocIsReportedWhenItIsTheProcessMalloc() async throws {
        let line = try await Self.listeningLine(environment: ["LD_PRELOAD": Self.jemalloc!])
        #expect(line.contains("allocator=jemalloc"), "\(line)")
    }
    #endif
}
