import Foundation
import PushPipeStages
import PushPipeTesting
import Testing

@testable import PushPipeCore

/// Provider flow control. A provider's throttling answer with `Retry-After` pauses the
/// transport for every event, not only the one that got it; `delivery.max_rate` paces sends.
@Suite struct TransportGateTests {
    static let renderer = """
        renderer: {type: json.template, payload: {text: "{{text}}"}}
        """

    /// Event 1 is throttled (60 s on the test's clock); event 2, for someone else and started
    /// right after, waits it out too. A retry that is no throttle pauses nothing.
    @Test(arguments: [
        (ProviderReason(code: "QUOTA_EXCEEDED", "QUOTA_EXCEEDED: Sending limit exceeded", throttlesSender: true), true),
        (ProviderReason(code: "UNAVAILABLE", "UNAVAILABLE: try later"), false),
    ])
    func aThrottleWithRetryAfterPausesEveryEvent(_ reason: ProviderReason, pauses: Bool) async throws {
        try await ScriptedPipeline.with(Self.renderer + "\ndelivery: {attempts: 3, backoff: 10ms, max_backoff: 20ms}") { pipeline in
            let first = String(repeating: "a1", count: 16)
            let second = String(repeating: "b2", count: 16)
            try await pipeline.register("alice", first)
            try await pipeline.register("bob", second)
            pipeline.transport.script(first, [.retryAfter(seconds: 60, reason: reason)])
            let (logger, messages) = StreamingLogHandler.logger()
            let clock = ManualClock()
            let processor = pipeline.processor(logger: logger, clock: clock)
            let throttled = Task { await processor.process(pipeline.event(user: "alice", ["text": "one"])) }
            // Its retry is scheduled: the first answer is in, and acted on.
            var told: [String] = []
            for await message in messages {
                told.append(message)
                if message.contains("will be retried") { break }
            }
            #expect(told.contains { $0.contains("the provider throttled") } == pauses, "\(told)")
            let other = Task { await processor.process(pipeline.event(user: "bob", ["text": "two"])) }
            if pauses {
                // Alice's retry and bob's event both wait for the clock.
                try await clock.sleepers(atLeast: 2)
                clock.advance(by: .milliseconds(59_999))
                #expect(!pipeline.transport.sends.contains(second), "bob's event waited out alice's throttle")
                clock.advance(by: .milliseconds(1))
                #expect(await other.value.status == .delivered)
            } else {
                // Bob's event goes while alice's retry still sleeps (bounded: a wrong pause would hang it).
                let report = await finished(within: .seconds(60)) { await other.value }
                #expect(report?.status == .delivered)
                #expect(clock.sleeping == 1 && clock.elapsed == .zero, "alice's retry still waits")
                clock.advance(by: .seconds(60))
            }
            #expect(await throttled.value.status == .delivered)
            // Paused, bob's send and alice's retry go at the same instant, in either order.
            #expect(pipeline.transport.sends.sorted() == [first, first, second])
        }
    }

    /// A throttle pauses only its own origin: otherwise one Web Push subscriber's push service
    /// (anyone can run one) answering `429 Retry-After: 3600` would pause every send of the
    /// pipeline for an hour, and every new event for that subscriber would arm it again.
    @Test func aThrottlePausesOnlyTheOriginThatAskedAndNotForever() async throws {
        try await ScriptedPipeline.with(Self.renderer + "\ndelivery: {attempts: 3, backoff: 10ms, max_backoff: 20ms}") { pipeline in
            let hostile = "other-" + String(repeating: "e1", count: 16)
            let bystander = String(repeating: "b2", count: 16)
            try await pipeline.register("mallory", hostile)
            try await pipeline.register("bob", bystander)
            pipeline.transport.script(
                hostile,
                [.retryAfter(seconds: 3600, reason: .http(429, "429")), .retryAfter(seconds: 3600, reason: .http(429, "429"))]
            )
            let processor = pipeline.processor
            let throttled = Task { await processor.process(pipeline.event(user: "mallory", ["text": "one"])) }
            await pipeline.transport.waitForSends(1)
            // Had the pause covered every origin, bob's events would wait it out (900 s, the cap);
            // two minutes is room for a busy machine and still far short of it.
            let statuses = await finished(within: .seconds(120)) {
                var statuses: [EventReport.Status] = []
                for index in 0..<3 {
                    statuses.append(await processor.process(pipeline.event(user: "bob", ["text": .string("two \(index)")])).status)
                }
                return statuses
            }
            #expect(statuses == [.delivered, .delivered, .delivered], "bob's events did not wait out mallory's push service")
            // Mallory's own event waits (held, no attempt spent) and is not sent again meanwhile.
            #expect(pipeline.transport.sends.filter { $0 == hostile }.count == 1)
            throttled.cancel()
            _ = await throttled.value
        }
    }

    @Test func aPauseIsCappedAndScopedToItsOrigin() {
        let gate = TransportGate(rate: nil)
        #expect(!gate.anyPause())
        gate.pause("https://push.example.net", for: .seconds(1e9))
        let remaining = try? #require(gate.remainingPause(of: "https://push.example.net"))
        #expect(remaining.map { $0 <= TransportGate.longestPause } == true)
        #expect(gate.remainingPause(of: "https://fcm.googleapis.com") == nil)
        #expect(TransportGate.scope(of: "https://FCM.googleapis.com/v1/projects/p/messages:send") == "https://fcm.googleapis.com")
        #expect(TransportGate.scope(of: "https://push.example.net:8443/push/abc?x=1") == "https://push.example.net:8443")
        #expect(TransportOutcome.retryAfter(seconds: 1e300, reason: .http(429, "429")).providerPause == TransportGate.longestPause)
    }

    @Test func maxRatePacesTheSends() async throws {
        try await ScriptedPipeline.with(Self.renderer + "\ndelivery: {max_rate: 20/s}") { pipeline in
            for index in 0..<40 { try await pipeline.register("user\(index)", String(format: "%032x", index + 1)) }
            let clock = ManualClock()
            let processor = pipeline.processor(clock: clock)
            let elapsed = await clock.advancing(by: .milliseconds(10)) {
                for index in 0..<40 { _ = await processor.process(pipeline.event(user: "user\(index)", ["text": "paced"])) }
                return clock.elapsed
            }
            // A bucket of one second (20 sends), then 20 more at 20/s, in steps of 10 ms.
            #expect(elapsed >= .milliseconds(1000) && elapsed <= .milliseconds(1010), "40 sends at 20/s with a burst of 20: \(elapsed)")
            #expect(pipeline.transport.sends.count == 40)
        }
    }

    @Test func onlyASendersThrottleWithRetryAfterPauses() {
        let quota = ProviderReason(code: "QUOTA_EXCEEDED", "QUOTA_EXCEEDED: limit", throttlesSender: true)
        #expect(TransportOutcome.retryAfter(seconds: 30, reason: quota).providerPause == .seconds(30))
        #expect(TransportOutcome.retryAfter(seconds: 5, reason: .http(429, "HTTP 429: slow down")).providerPause == .seconds(5))
        #expect(
            TransportOutcome.retryAfter(seconds: nil, reason: ProviderReason(code: "TooManyRequests", "TooManyRequests")).providerPause == nil,
            "APNs: one device, no Retry-After"
        )
        #expect(TransportOutcome.retryAfter(seconds: 5, reason: ProviderReason(code: "UNAVAILABLE", "UNAVAILABLE: later")).providerPause == nil)
        #expect(TransportOutcome.retryAfter(seconds: 0, reason: .http(429, "HTTP 429: now")).providerPause == nil)
        #expect(TransportOutcome.retryAfter(seconds: 5, reason: .http(503, "HTTP 503")).providerPause == nil)
    }

    @Test func aMaxRateThatIsNoRateIsAConfigurationError() async throws {
        let directory = try TemporaryDirectory("max-rate")
        defer { directory.remove() }
        let file = try directory.write(
            "bad.yaml",
            """
            pipeline: bad
            sources:
              - {type: http.event, path: /events}
            renderer: {type: json.template, payload: {}}
            transport: {type: stdout}
            delivery: {max_rate: fast}
            """
        )
        let result = await ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
            .load(pipelineFiles: [file], pluginsDirectory: nil)
        let error = try #require(result.diagnostics.errors.first)
        #expect(error.keyPath == "delivery.max_rate" && error.message.contains("'fast'"), "\(error)")
    }
}
