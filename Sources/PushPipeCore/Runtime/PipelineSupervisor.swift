import Logging
import ServiceLifecycle
import Synchronization

/// Owns the running pipelines. Applying a new set of definitions restarts only the
/// pipelines whose fingerprint changed; graceful shutdown stops and drains them all.
public final class PipelineSupervisor: Service, Sendable {
    let store: any Store
    let host: any RouteServing
    let logger: Logger
    let mode: RunMode
    let output: OutputSink
    public let telemetry: Telemetry
    let webhookPoster: (any WebhookPoster)?
    let clock: any DaemonClock
    /// Set once the first set of pipelines was applied (readiness waits for it).
    private let appliedOnce = Atomic<Bool>(false)
    private let firstApplied = StartLatch()
    private let commands: AsyncStream<Command>
    private let commandContinuation: AsyncStream<Command>.Continuation
    private let running = Mutex<[String: Running]>([:])

    struct Command: Sendable {
        var definitions: [PipelineDefinition]
        var done: @Sendable () -> Void
    }

    struct Running: Sendable {
        var runner: PipelineRunner
        var finished: AsyncStream<Void>
        var finish: AsyncStream<Void>.Continuation
    }

    /// - Parameter initial: the pipelines started as soon as `run` begins.
    public init(
        initial: [PipelineDefinition],
        store: any Store,
        host: any RouteServing,
        logger: Logger,
        mode: RunMode,
        output: OutputSink = .standardOutput,
        telemetry: Telemetry = .unobserved,
        webhookPoster: (any WebhookPoster)? = nil,
        clock: any DaemonClock = .system
    ) {
        // Routes and pipelines alike: a dry run's accepted events are kept nowhere.
        self.store = mode.store(store)
        self.clock = clock
        self.webhookPoster = webhookPoster
        self.telemetry = telemetry
        self.host = host
        self.logger = logger
        self.mode = mode
        self.output = output
        (commands, commandContinuation) = AsyncStream<Command>.makeStream()
        commandContinuation.yield(Command(definitions: initial, done: {}))
    }

    /// Replaces the running set with `definitions`; returns once changed pipelines restarted.
    public func apply(_ definitions: [PipelineDefinition]) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let result = commandContinuation.yield(Command(definitions: definitions, done: { continuation.resume() }))
            if case .terminated = result { continuation.resume() }
        }
    }

    /// The runners, by name (status page, gauges, readiness).
    public var runners: [PipelineRunner] {
        running.withLock { $0.values.map(\.runner) }.sorted { $0.definition.name < $1.definition.name }
    }

    var hasAppliedConfiguration: Bool { appliedOnce.load(ordering: .relaxed) }

    /// Returns once the first configuration is applied and each of its pipelines started (or
    /// ended without starting): from then on `/readyz` tells how the pipelines are, not that
    /// they are starting. The daemon tells systemd it is ready then.
    public func waitUntilStarted() async {
        await firstApplied.wait()
        for runner in runners { await runner.waitUntilStarted() }
    }

    public func run() async throws {
        await withDiscardingTaskGroup { group in
            await withGracefulShutdownHandler {
                for await command in commands {
                    await apply(command.definitions, in: &group)
                    appliedOnce.store(true, ordering: .relaxed)
                    firstApplied.open()
                    command.done()
                }
            } onGracefulShutdown: {
                self.commandContinuation.finish()
            }
            firstApplied.open()
            logger.info("stopping pipelines")
            let all = running.withLock { $0.values.map(\.runner) }
            for runner in all { runner.stop() }
        }
    }

    /// Begins the stop at once: no more configurations are applied, and every pipeline refuses
    /// new events and drains. Called as a stop begins, before the listeners wait for their
    /// requests: a request blocked in a full pipeline's `submit` is answered (refused) then,
    /// instead of holding its listener, and so the whole stop, for as long as the pipeline is full.
    public func beginStopping() {
        commandContinuation.finish()
    }

    private func apply(_ definitions: [PipelineDefinition], in group: inout DiscardingTaskGroup) async {
        let current = running.withLock { $0 }
        let wanted = Dictionary(definitions.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let stale = current.filter { name, entry in wanted[name]?.fingerprint != entry.runner.definition.fingerprint }
        for (name, entry) in stale {
            logger.info("stopping pipeline \(name) (\(wanted[name] == nil ? "removed" : "changed"))")
            entry.runner.stop()
            for await _ in entry.finished {}
            running.withLock { _ = $0.removeValue(forKey: name) }
        }
        var starting: [Running] = []
        for definition in definitions where running.withLock({ $0[definition.name] == nil }) {
            let runner = PipelineRunner(
                definition: definition,
                store: store,
                logger: logger,
                mode: mode,
                output: output,
                telemetry: telemetry,
                webhookPoster: webhookPoster,
                clock: clock
            )
            let (finished, finish) = AsyncStream<Void>.makeStream()
            let entry = Running(runner: runner, finished: finished, finish: finish)
            running.withLock { $0[definition.name] = entry }
            starting.append(entry)
        }
        // Routes first (an event that comes before its pipeline runs gets 503, a registration
        // works at once), then the store's moves, which must come before any source claims.
        host.replaceRoutes(routeTable())
        await moveEventsQueuedByPosition(starting.map(\.runner.definition))
        for entry in starting {
            group.addTask {
                await self.runPipeline(entry.runner)
                entry.finish.finish()
            }
        }
        group.addTask { await self.reportUnclaimedQueuedEvents(definitions) }
    }

    func routeTable() -> RouteTable {
        var table = RouteTable()
        for entry in running.withLock({ $0.values.sorted { $0.runner.definition.name < $1.runner.definition.name } }) {
            let definition = entry.runner.definition
            let stages: [any Sendable] =
                definition.sources.map(\.stage) + definition.filters.map(\.stage)
                + [definition.renderer.stage, definition.configuredTransport]
            var context = RouteContext(
                pipeline: definition.name,
                store: store,
                sink: entry.runner,
                registrationObservers: stages.compactMap { $0 as? any RegistrationObserver },
                diagnosticsProviders: stages.compactMap { $0 as? any DiagnosticsProvider },
                logger: entry.runner.logger
            )
            context.idempotency = definition.idempotency
            context.mode = mode
            context.tokenValidators = stages.compactMap { $0 as? any TokenValidator }
            for declared in entry.runner.definition.routes { table.add(declared.route, context: context) }
        }
        return table
    }
}
