import PushPipeCore
import PushPipeTesting
import Testing

@testable import PushPipeStages

/// The pool grows while every stream of its connections is taken and shrinks back when the
/// load is gone, against the stand-in (answers held for a while stand for a long round trip).
@Suite struct HTTP2ConnectionPoolTests {
    func sendSlowlyAnswered(_ count: Int, seconds: Double, _ harness: APNsHarness, _ processor: EventProcessor) async throws {
        for index in 0..<count { try await harness.register("user\(index)", String(format: "%064x", index + 1)) }
        for _ in 0..<count { harness.standIn.script(.delayed(.seconds(seconds), .accept)) }
        let reports = await harness.processConcurrently(processor, users: count)
        #expect(reports.count == count)
        #expect(reports.allSatisfy { $0.status == .delivered && $0.deliveries.first?.attempts == 1 })
        #expect(harness.standIn.requests.allSatisfy { $0.rejection == nil })
    }

    func sendSlowlyAnswered(_ count: Int, seconds: Double, _ harness: APNsHarness) async throws {
        try await harness.run { try await sendSlowlyAnswered(count, seconds: seconds, harness, $0) }
    }

    /// Answers take long enough (1.5 s) that all connections are open and carrying requests
    /// before the first answers come, even on a loaded machine.
    ///
    /// Two streams per connection and twelve notifications at once: one connection would carry
    /// two at a time; three carry six, and the rest wait their turn on them.
    @Test func connectionsOpenWhileEveryStreamIsTaken() async throws {
        let harness = try await APNsHarness.make(maxStreams: 2, maxConnections: 3)
        try await withCleanup(
            {
                try await sendSlowlyAnswered(12, seconds: 1.5, harness)
                #expect(harness.standIn.connections == 3)
                // What the pool decided, not how many requests a loaded machine managed to overlap:
                // never more than 2 streams on one connection.
                #expect(harness.standIn.mostConcurrentRequestsOnOneConnection <= 2)
                #expect((3...6).contains(harness.standIn.mostConcurrentRequests), "more than one connection's streams were in use")
            },
            cleanup: harness.close
        )
    }

    /// `max_streams` allows 100, but the server's SETTINGS_MAX_CONCURRENT_STREAMS says 1: the
    /// connection is full with one request, so the pool grows to its limit.
    @Test func theServersStreamLimitDecidesWhenAConnectionIsFull() async throws {
        let harness = try await APNsHarness.make(maxStreams: 100, serverStreamLimit: 1, maxConnections: 4)
        try await withCleanup(
            {
                try await sendSlowlyAnswered(8, seconds: 1.5, harness)
                #expect(harness.standIn.connections == 4)
                #expect(harness.standIn.mostConcurrentRequestsOnOneConnection == 1, "the server's limit, not max_streams")
                #expect((2...4).contains(harness.standIn.mostConcurrentRequests))
            },
            cleanup: harness.close
        )
    }

    /// Below the limit nothing more opens: a hundred notifications fit one connection's streams.
    @Test func oneConnectionCarriesWhatFitsItsStreams() async throws {
        let harness = try await APNsHarness.make(maxStreams: 100, maxConnections: 4)
        try await withCleanup(
            {
                try await sendSlowlyAnswered(50, seconds: 0.2, harness)
                #expect(harness.standIn.connections == 1)
            },
            cleanup: harness.close
        )
    }

    /// The extra connections close after `idle_timeout`; the kept one stays and carries the
    /// next notification without a new connection.
    @Test func extraConnectionsCloseWhenIdleAndTheKeptOneStays() async throws {
        let harness = try await APNsHarness.make(maxStreams: 1, maxConnections: 3, idleTimeout: "500ms")
        try await withCleanup(
            {
                try await harness.run { processor in
                    try await sendSlowlyAnswered(3, seconds: 0.5, harness, processor)
                    let opened = harness.standIn.connections
                    #expect(opened >= 2, "one stream per connection: more opened")
                    try await harness.standIn.waitForOpenConnections(1)
                    let report = await processor.process(harness.event(user: "user0"))
                    #expect(report.status == .delivered)
                    #expect(harness.standIn.connections == opened, "the kept connection carried it")
                }
            },
            cleanup: harness.close
        )
    }

    /// The schema's ranges refuse them where they are written, before a transport is made.
    @Test(arguments: [("max_connections: 65", "transport.max_connections"), ("idle_timeout: 0", "transport.idle_timeout")])
    func maxConnectionsAndIdleTimeoutAreChecked(_ line: String, _ keyPath: String) async throws {
        let directory = try TemporaryDirectory("apns-ranges")
        defer { directory.remove() }
        let file = try directory.write(
            "apns.yaml",
            """
            pipeline: apns
            sources: [{type: http.event, path: /events}]
            renderer: {type: apns.alert, title: hi}
            transport:
              type: apns
              team_id: TEAM123456
              key_id: KEY1234567
              key_path: AuthKey.p8
              bundle_id: com.example.app
              \(line)
            """
        )
        let loaded = await ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
            .load(pipelineFiles: [file], pluginsDirectory: nil)
        #expect(loaded.pipelines.isEmpty)
        let diagnostic = try #require(loaded.diagnostics.first { $0.keyPath == keyPath }, "\(loaded.diagnostics)")
        #expect(diagnostic.location.line == 10)
    }
}
