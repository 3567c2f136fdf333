import Foundation
import Logging
import PushPipeCore
import PushPipePlugins
import PushPipePostgres
import PushPipeSQLite
import PushPipeStages
import PushPipeTesting
import Synchronization

/// A transport whose answers the test decides: it counts sends and how many run at once,
/// and can hold every send until the test lets it go (a delivery "in flight").
final class ScriptedTransport: Transport, Sendable {
    struct Configuration: StageConfiguration {
        static let schema = Schema([])
    }

    private struct State {
        var sends: [String] = []
        var sendTimes: [ContinuousClock.Instant] = []
        var running = 0
        var mostRunning = 0
        var answer: TransportOutcome = .delivered(providerID: "ok")
        /// Answers for one token, first to last, before `answer` applies to it.
        var scripted: [String: [TransportOutcome]] = [:]
        /// How many requests each batch send carried.
        var batches: [Int] = []
        /// Sends still to hold (a delivery "in flight" until `release`).
        var toHold = 0
        var held: [CheckedContinuation<Void, Never>] = []
        /// Tokens whose next send is held until `release(token:)` (or `release`).
        var holdingTokens: Set<String> = []
        var heldTokens: [String: [CheckedContinuation<Void, Never>]] = [:]
    }

    private let state = Mutex(State())
    /// Yields after every send started: tests await the count they need.
    let started = AsyncStream<Int>.makeStream()

    var sends: [String] { state.withLock { $0.sends } }
    /// When each send started, in order.
    var sendTimes: [ContinuousClock.Instant] { state.withLock { $0.sendTimes } }
    var mostRunning: Int { state.withLock { $0.mostRunning } }

    var batches: [Int] { state.withLock { $0.batches } }

    func answer(_ outcome: TransportOutcome) { state.withLock { $0.answer = outcome } }

    /// The next answers to requests for `token`.
    func script(_ token: String, _ outcomes: [TransportOutcome]) { state.withLock { $0.scripted[token, default: []] += outcomes } }

    /// Holds the next `count` sends until `release`; later ones go through.
    func hold(next count: Int = 1) { state.withLock { $0.toHold = count } }

    func release() {
        let held = state.withLock { state in
            state.toHold = 0
            state.holdingTokens.removeAll()
            defer {
                state.held.removeAll()
                state.heldTokens.removeAll()
            }
            return state.held + state.heldTokens.values.joined()
        }
        for continuation in held { continuation.resume() }
    }

    /// Holds the next send to `token` (only that one) until `release(token:)`.
    func hold(token: String) { state.withLock { _ = $0.holdingTokens.insert(token) } }

    func release(token: String) {
        let held = state.withLock { state in
            state.holdingTokens.remove(token)
            return state.heldTokens.removeValue(forKey: token) ?? []
        }
        for continuation in held { continuation.resume() }
    }

    /// Returns once `count` sends have started.
    func waitForSends(_ count: Int) async {
        if sends.count >= count { return }
        for await started in started.stream where started >= count { return }
    }

    func prepare(_ notification: RenderedNotification, context: StageContext) throws -> OutgoingRequest {
        // One provider for every token, as APNs or FCM are; a token starting `other-` is at
        // another origin, as Web Push subscriptions of other push services are.
        let origin = notification.token.value.hasPrefix("other-") ? "https://other.example" : "https://provider.example"
        return OutgoingRequest(url: "\(origin)/\(notification.token.value)", headers: [], sending: notification)
    }

    func send(_ request: OutgoingRequest, context: StageContext) async -> TransportOutcome {
        let count = state.withLock { state in
            state.sends.append(request.token.value)
            state.sendTimes.append(.now)
            state.running += 1
            state.mostRunning = max(state.mostRunning, state.running)
            return state.sends.count
        }
        started.continuation.yield(count)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let holding = state.withLock { state in
                if state.holdingTokens.remove(request.token.value) != nil {
                    state.heldTokens[request.token.value, default: []].append(continuation)
                    return true
                }
                guard state.toHold > 0 else { return false }
                state.toHold -= 1
                state.held.append(continuation)
                return true
            }
            if !holding { continuation.resume() }
        }
        await Task.yield()
        return state.withLock { state in
            state.running -= 1
            if var scripted = state.scripted[request.token.value], !scripted.isEmpty {
                let next = scripted.removeFirst()
                state.scripted[request.token.value] = scripted
                return next
            }
            return state.answer
        }
    }

    func send(batch requests: [OutgoingRequest], context: StageContext) async -> [TransportOutcome] {
        state.withLock { $0.batches.append(requests.count) }
        return await sendConcurrently(requests, context: context)
    }
}

/// A pipeline built from YAML with the scripted transport, and a real SQLite store.
struct ScriptedPipeline {
    let directory: TemporaryDirectory
    let transport: ScriptedTransport
    let store: SQLiteStore
    let definition: PipelineDefinition

    /// - Parameter body: the pipeline's YAML after `pipeline:` and `sources:`; the transport is `scripted`.
    static func make(_ body: String, stages: [StageDescriptor] = []) async throws -> ScriptedPipeline {
        let directory = try TemporaryDirectory("scripted")
        let transport = ScriptedTransport()
        let definition = try await definition(body, in: directory, transport: transport, stages: stages)
        return ScriptedPipeline(
            directory: directory,
            transport: transport,
            store: try SQLiteStore(path: directory.file("state.sqlite")),
            definition: definition
        )
    }

    /// The pipeline `scripted` (an `http.event` source, `body`, the `transport`), loaded as the daemon loads a file in `directory`.
    static func definition(
        _ body: String,
        in directory: TemporaryDirectory,
        transport: ScriptedTransport,
        stages: [StageDescriptor] = []
    ) async throws -> PipelineDefinition {
        let descriptor = StageDescriptor.transport("scripted", "Answers as the test says.", ScriptedTransport.Configuration.self) { _, _ in transport
        }
        let file = try directory.write(
            "scripted.yaml",
            """
            pipeline: scripted
            sources:
              - {type: http.event, path: /events}
            \(body)
            transport: {type: scripted}
            """
        )
        let loader = ConfigLoader(builtins: BuiltinStages.all + [descriptor] + stages, interpolation: EnvironmentInterpolation(environment: [:]))
        let result = await loader.load(pipelineFiles: [file], pluginsDirectory: nil)
        guard let definition = result.pipelines.first else { throw ConfigurationError(result.diagnostics) }
        return definition
    }

    var processor: EventProcessor { processor(logger: Logger(label: "scripted")) }

    func processor(
        logger: Logger = Logger(label: "scripted"),
        mode: RunMode = .live,
        output: OutputSink = OutputSink { _ in },
        clock: any DaemonClock = .system
    ) -> EventProcessor {
        EventProcessor(definition: definition, store: store, logger: logger, mode: mode, output: output, clock: clock)
    }

    func register(_ user: String, _ token: String) async throws {
        try await store.pipeline(definition.name).register(DeviceToken(user: user, kind: "device", value: token), environment: nil, replace: false)
    }

    func event(user: String?, _ body: JSON) -> Event {
        Event(pipeline: definition.name, user: user, body: body)
    }

    func close() async {
        try? await store.close()
        directory.remove()
    }

    static func with(_ body: String, stages: [StageDescriptor] = [], _ run: (ScriptedPipeline) async throws -> Void) async throws {
        let pipeline = try await make(body, stages: stages)
        try await withCleanup({ try await run(pipeline) }, cleanup: pipeline.close)
    }
}

/// A log handler that hands every message to the test: what the processor logs marks where
/// it is (a retry being scheduled), so a test can act at that moment without sleeping.
struct StreamingLogHandler: LogHandler {
    let messages: AsyncStream<String>.Continuation
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String, function: String, line: UInt) {
        messages.yield(message.description)
    }

    /// A logger whose messages arrive on the returned stream.
    static func logger() -> (Logger, AsyncStream<String>) {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        return (Logger(label: "scripted") { _ in StreamingLogHandler(messages: continuation) }, stream)
    }
}
