import Logging
import Testing

@testable import PushPipeCore

@Suite struct PipelineRunnerStopTests {
    /// A daemon finishes stopping after SIGTERM even with a transport that does not answer: a
    /// source waiting for room in a full pipeline has its event refused at once, and the
    /// drain's deadline counts from the stop, not from the end of every source.
    @Test func aStopIsBoundedByTheDrainTimeoutWhileASourceWaitsForRoom() async throws {
        try await ScriptedPipeline.with(
            """
            renderer: {type: json.template, payload: {n: {$from: n}}}
            delivery: {concurrency: 1, drain_timeout: 200ms}
            """
        ) { pipeline in
            try await pipeline.register("u", "t1")
            pipeline.transport.hold(next: 100)
            let (logger, messages) = StreamingLogHandler.logger()
            let runner = PipelineRunner(
                definition: pipeline.definition,
                store: pipeline.store,
                logger: logger,
                mode: .live,
                output: OutputSink { _ in }
            )
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await runner.run() }
                while !runner.isRunning { await Task.yield() }
                try await runner.submit(pipeline.event(user: "u", ["n": 1]))
                await pipeline.transport.waitForSends(1)
                // The one event in flight fills the pipeline: the next submit waits for room.
                let waiting = Task { try await runner.submit(pipeline.event(user: "u", ["n": 2])) }
                while runner.queued < 1 { await Task.yield() }
                runner.stop()
                let timedOut = await Self.message(containing: "drain timeout", in: messages, within: .seconds(20))
                #expect(timedOut, "the drain timeout ends the stop")
                // The scripted transport ignores cancellation (a real one does not): let it answer.
                pipeline.transport.release()
                await #expect(throws: PipelineStopping.self, "refused, not left waiting") { try await waiting.value }
                try await group.waitForAll()
            }
            #expect(pipeline.transport.sends == ["t1"], "the refused event was never sent")
        }
    }

    /// Whether a message containing `text` comes within `limit`.
    static func message(containing text: String, in messages: AsyncStream<String>, within limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await message in messages where message.contains(text) { return true }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            defer { group.cancelAll() }
            return await group.next() ?? false
        }
    }
}
