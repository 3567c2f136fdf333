import Logging
import PushPipePostgresTesting
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipePostgres

/// A store that is away is waited for: otherwise an event whose recipients cannot be read
/// during a database outage would fail, and its source would remove it from the queue as
/// processed, losing an accepted event.
@Suite(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
struct EventProcessorStoreWaitTests {
    @Test func anEventWhoseRecipientsCannotBeReadDuringAnOutageIsDeliveredAfterIt() async throws {
        try await ScriptedPipeline.with("renderer: {type: json.template, payload: {n: {$from: n}}}") { pipeline in
            let url = try await TestStores.freshPostgresURL() + "&connect_timeout=3"
            let location = try PostgresLocation(parsing: url)
            let store = try await PostgresStore(location: location, logger: Logger(label: "test"))
            let outage = try DatabaseOutage(url: url)
            try await withCleanup(
                {
                    try await store.pipeline(pipeline.definition.name).register(
                        DeviceToken(user: "u", kind: "device", value: "t1"),
                        environment: nil,
                        replace: false
                    )
                    let (logger, messages) = StreamingLogHandler.logger()
                    let processor = EventProcessor(
                        definition: pipeline.definition,
                        store: store,
                        logger: logger,
                        mode: .live,
                        output: OutputSink { _ in }
                    )
                    let report = try await withThrowingTaskGroup(of: EventReport?.self, returning: EventReport?.self) { group in
                        group.addTask {
                            await outage.run()
                            return nil
                        }
                        defer { group.cancelAll() }
                        try await outage.begin()
                        group.addTask { await processor.process(pipeline.event(user: "u", ["n": 1])) }
                        // Back once the event found the store away (or failed for it, which the checks below catch).
                        for await message in messages where message.contains("waits for the store") || message.contains("failed") { break }
                        try await outage.end()
                        while let next = try await group.next() {
                            if let report = next { return report }
                        }
                        return nil
                    }
                    #expect(report?.status == .delivered, "\(report?.reason ?? "no report")")
                    #expect(pipeline.transport.sends == ["t1"])
                },
                cleanup: { try? await store.close() }
            )
        }
    }
}
