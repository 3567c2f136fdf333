import Foundation
import PushPipeStages
import PushPipeTesting
import Synchronization
import Testing

@testable import PushPipeCore

/// A dry run is a printing transport and a store that keeps nothing sent, not mode checks
/// through the runtime: the runtime runs as it does live, and what differs is decorated.
@Suite struct DryRunDecoratorTests {
    static let renderer = """
        renderer: {type: json.template, payload: {text: "{{text}}"}}
        """

    @Test func aDryRunPrintsTheRequestSendsNothingAndRecordsNothing() async throws {
        try await ScriptedPipeline.with(Self.renderer) { pipeline in
            let token = String(repeating: "ab", count: 16)
            try await pipeline.register("alice", token)
            let printed = Mutex<[String]>([])
            let processor = pipeline.processor(mode: .dryRun, output: OutputSink { line in printed.withLock { $0.append(line) } })
            let event = pipeline.event(user: "alice", ["text": "hello"])
            let report = await processor.process(event)
            #expect(report.status == .delivered)
            #expect(pipeline.transport.sends.isEmpty, "the provider was not called")
            let lines = printed.withLock { $0 }
            #expect(lines.count == 1 && lines[0].contains("[scripted] would send:") && lines[0].contains("hello"), "\(lines)")
            #expect(try await pipeline.store.pipeline("scripted").lastDelivery(user: "alice") == nil, "no delivery recorded")
            #expect(try await pipeline.store.pipeline("scripted").history(user: "alice", limit: 10, before: nil).isEmpty)
            #expect(try await pipeline.store.eventRecords(eventID: event.id, pipeline: "scripted").records.isEmpty, "no event record")

            // The same processor live sends and records: the decorators alone made the difference.
            let live = await pipeline.processor().process(pipeline.event(user: "alice", ["text": "live"]))
            #expect(live.status == .delivered && pipeline.transport.sends == [token])
            #expect(try await pipeline.store.pipeline("scripted").lastDelivery(user: "alice") != nil)
        }
    }

    /// A daemon started with `--dry-run` on a live daemon's state leaves what that daemon left
    /// queued alone: printed and removed from the queue, those notifications would never be sent.
    @Test func aDryRunLeavesALiveDaemonsQueuedEventsAlone() async throws {
        try await ScriptedPipeline.with(Self.renderer) { pipeline in
            var left = QueuedEvent(
                pipeline: "scripted",
                source: "http.event",
                eventID: "left-behind",
                user: "alice",
                time: Date().timeIntervalSince1970,
                body: ["text": "unsent"],
                lease: .seconds(-1)
            )
            left.instance = "a-live-daemon-that-died"
            try await pipeline.store.enqueue(left)
            let dryRun = RunMode.dryRun.store(pipeline.store)
            #expect(try await dryRun.pipeline("scripted").claimQueuedEvents(source: "http.event", lease: .seconds(30), limit: 10).isEmpty)
            try await dryRun.pipeline("scripted").dequeue(source: "http.event", key: left.key)
            try await dryRun.pipeline("scripted").releaseLeases(source: "http.event", keys: [left.key])
            let claimed = try await RunMode.live.store(pipeline.store).pipeline("scripted").claimQueuedEvents(
                source: "http.event",
                lease: .seconds(30),
                limit: 10
            )
            #expect(claimed.map(\.eventID) == ["left-behind"], "still queued for a live daemon")
        }
    }

    /// The loss where it happened: a runner's claim loop. Live, the event a dead daemon left is
    /// claimed and sent; in a dry run every loop makes its first pass (and then sleeps on the
    /// test's clock) and the event is neither sent nor taken from the queue.
    @Test(arguments: [RunMode.live, .dryRun])
    func aRunnerTakesOverALiveDaemonsEventOnlyWhenLive(_ mode: RunMode) async throws {
        try await ScriptedPipeline.with(Self.renderer) { pipeline in
            let token = String(repeating: "cd", count: 16)
            try await pipeline.register("alice", token)
            var left = QueuedEvent(
                pipeline: "scripted",
                source: "http.event",
                eventID: "left-behind",
                user: "alice",
                time: Date().timeIntervalSince1970,
                body: ["text": "unsent"],
                lease: .seconds(-1)
            )
            left.instance = "a-live-daemon-that-died"
            try await pipeline.store.enqueue(left)
            let clock = ManualClock()
            let runner = PipelineRunner(
                definition: pipeline.definition,
                store: pipeline.store,
                logger: .init(label: "dry-run"),
                mode: mode,
                output: OutputSink { _ in },
                clock: clock
            )
            let running = Task { await runner.run() }
            if mode == .live {
                await pipeline.transport.waitForSends(1)
                #expect(pipeline.transport.sends == [token], "a live runner sends what the dead daemon left")
            } else {
                // Retention, the replays' renewal and claims, and the source's claims: each made
                // its first pass, and sleeps until the clock moves.
                try await clock.sleepers(atLeast: 4)
                #expect(pipeline.transport.sends.isEmpty)
                let waiting = try await pipeline.store.pipeline("scripted").claimQueuedEvents(source: "http.event", lease: .seconds(30), limit: 10)
                #expect(waiting.map(\.eventID) == ["left-behind"], "still queued for a live daemon")
            }
            runner.stop()
            await running.value
        }
    }

    /// What people put in is kept in a dry run: a registration made through it is there after it.
    @Test func aDryRunKeepsRegistrationsAndSettings() async throws {
        try await ScriptedPipeline.with(Self.renderer) { pipeline in
            let dryRun = RunMode.dryRun.store(pipeline.store)
            try await dryRun.pipeline("scripted").register(DeviceToken(user: "bob", kind: "device", value: "cd34"), environment: nil, replace: false)
            try await dryRun.pipeline("scripted").setSettings(["muted": true], user: "bob")
            try await dryRun.pipeline("scripted").setState([StateWrite(stage: "filters[0]", key: "bob", value: 42)])
            #expect(try await pipeline.store.pipeline("scripted").tokens(user: "bob", kind: "device").map(\.value) == ["cd34"])
            #expect(try await pipeline.store.pipeline("scripted").setting(user: "bob", key: "muted") == true)
            #expect(try await pipeline.store.pipeline("scripted").state(stage: "filters[0]", key: "bob") == nil, "a watermark is output: not moved")
        }
    }
}
