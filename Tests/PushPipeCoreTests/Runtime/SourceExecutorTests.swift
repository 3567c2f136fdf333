import Dispatch
import Logging
import PushPipeCore
import PushPipeSQLite
import PushPipeStages
import PushPipeTesting
import Synchronization
import Testing

/// A task executor whose jobs run on a queue that knows it: a stage can tell whether it runs there.
private final class MarkedExecutor: TaskExecutor {
    static let key = DispatchSpecificKey<Bool>()
    private let queue = DispatchQueue(label: "marked-executor")

    init() {
        queue.setSpecific(key: Self.key, value: true)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    static var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }
}

/// Submits one event, then waits to be cancelled; names `executor` as where it wants to run.
private struct OneEventSource: Source {
    struct Configuration: StageConfiguration {
        static let schema = Schema([])
    }

    let executor: MarkedExecutor?
    var preferredExecutor: (any TaskExecutor)? { executor }

    func run(into sink: any EventSink, context: StageContext) async throws {
        try await sink.submit(Event(pipeline: context.pipeline, user: "1", body: ["n": 1]))
        await untilCancelled()
    }
}

/// Notes whether each send ran on the marked executor; names `choice` as where the workers run.
private final class WhereTransport: Transport, Sendable {
    struct Configuration: StageConfiguration {
        static let schema = Schema([])
    }

    let sends = AsyncStream<Bool>.makeStream()
    let choice: (any TaskExecutor)?
    var preferredExecutor: (any TaskExecutor)? { choice }

    init(choice: (any TaskExecutor)? = nil) {
        self.choice = choice
    }

    func prepare(_ notification: RenderedNotification, context: StageContext) throws -> OutgoingRequest {
        OutgoingRequest(url: "where://\(notification.token.value)", headers: [], sending: notification)
    }

    func send(_ request: OutgoingRequest, context: StageContext) async -> TransportOutcome {
        sends.continuation.yield(MarkedExecutor.isCurrent)
        return .delivered(providerID: "ok")
    }
}

@Suite struct SourceExecutorTests {
    /// A poller names its HTTP client's event loop; the pipeline's workers must run there too,
    /// or every event it finds wakes a thread of Swift's pool, a large share of an OGS check's CPU.
    @Test(arguments: [true, false])
    func workersRunOnTheExecutorTheSourcesName(_ named: Bool) async throws {
        #expect(try await sendRanOnTheMarkedExecutor(sourceNamesIt: named, transport: WhereTransport()) == named)
    }

    /// An APNs or FCM transport frames every request on its connections' loops: it keeps the
    /// workers on Swift's pool whatever the sources name, so the framing does not slow them.
    @Test func theTransportsChoiceComesFirst() async throws {
        #expect(try await sendRanOnTheMarkedExecutor(sourceNamesIt: true, transport: WhereTransport(choice: globalConcurrentExecutor)) == false)
    }

    private func sendRanOnTheMarkedExecutor(sourceNamesIt named: Bool, transport: WhereTransport) async throws -> Bool? {
        let directory = try TemporaryDirectory("source-executor")
        defer { directory.remove() }
        let executor = named ? MarkedExecutor() : nil
        let stages = [
            StageDescriptor.source("one.event", "One event.", OneEventSource.Configuration.self) { _, _ in OneEventSource(executor: executor) },
            StageDescriptor.transport("where", "Notes where it runs.", WhereTransport.Configuration.self) { _, _ in transport },
        ]
        let file = try directory.write(
            "where.yaml",
            """
            pipeline: where
            sources: [{type: one.event}]
            renderer: {type: json.template, payload: {n: {$from: n}}}
            transport: {type: where}
            """
        )
        let loaded = await ConfigLoader(builtins: BuiltinStages.all + stages, interpolation: EnvironmentInterpolation(environment: [:]))
            .load(pipelineFiles: [file], pluginsDirectory: nil)
        let definition = try #require(loaded.pipelines.first, "\(loaded.diagnostics)")
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        try await store.pipeline(definition.name).register(
            DeviceToken(user: "1", kind: "device", value: String(repeating: "ab", count: 32)),
            environment: nil,
            replace: false
        )
        let runner = PipelineRunner(definition: definition, store: store, logger: Logger(label: "where"), mode: .live, output: OutputSink { _ in })
        var onExecutor: Bool?
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await runner.run() }
            for await sent in transport.sends.stream {
                onExecutor = sent
                break
            }
            runner.stop()
        }
        try await store.close()
        return onExecutor
    }
}
