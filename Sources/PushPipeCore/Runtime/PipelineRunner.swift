import Logging
import Synchronization

/// Runs one pipeline: its long-running stages, its sources, and a few workers taking events
/// from a bounded queue. At most `delivery.concurrency` events are between a source's `submit`
/// and their completion; `submit` suspends while that many are, so a slow transport slows the
/// sources and memory stays bounded.
public final class PipelineRunner: EventSink, Sendable {
    public let definition: PipelineDefinition
    let processor: EventProcessor
    let logger: Logger
    private let queue: EventQueue<Event>
    private let state = Mutex(State())
    private let stopSignal: AsyncStream<Void>
    private let stopContinuation: AsyncStream<Void>.Continuation
    public let telemetry: PipelineTelemetry
    private let started = Atomic<Bool>(false)
    /// Open once its sources started, or its run ended without (`waitUntilStarted`).
    private let startLatch = StartLatch()

    struct State {
        var accepting = true
        /// Submits that passed the `accepting` check and are waiting for room in the queue.
        var submitting = 0
    }

    /// Called with every event's report (benchmarks count completions; metrics will too).
    let onEventCompleted: (@Sendable (EventReport) -> Void)?

    /// Sends the outcomes of `definition.webhooks` (live, with a poster), nil otherwise.
    let webhooks: WebhookDispatcher?

    public init(
        definition: PipelineDefinition,
        store: any Store,
        logger: Logger,
        mode: RunMode,
        output: OutputSink = .standardOutput,
        telemetry: Telemetry = .unobserved,
        webhookPoster: (any WebhookPoster)? = nil,
        clock: any DaemonClock = .system,
        onEventCompleted: (@Sendable (EventReport) -> Void)? = nil
    ) {
        self.definition = mode.pipeline(definition)
        self.onEventCompleted = onEventCompleted
        var logger = logger
        logger[metadataKey: "pipeline"] = .string(definition.name)
        self.logger = logger
        queue = EventQueue(capacity: definition.delivery.concurrency)
        var processor = EventProcessor(
            definition: definition,
            store: store,
            logger: logger,
            mode: mode,
            output: output,
            telemetry: telemetry,
            clock: clock
        )
        if !definition.webhooks.isEmpty, let webhookPoster = mode.webhookPoster(webhookPoster) {
            let dispatcher = WebhookDispatcher(
                targets: definition.webhooks,
                work: store.pipeline(definition.name).work,
                poster: webhookPoster,
                telemetry: telemetry,
                logger: logger,
                clock: clock
            )
            processor.onWebhookOutcomes = dispatcher.nudge
            webhooks = dispatcher
        } else {
            webhooks = nil
        }
        self.processor = processor
        self.telemetry = processor.telemetry
        (stopSignal, stopContinuation) = AsyncStream<Void>.makeStream()
    }

    public func submit(_ event: Event) async throws {
        let admitted = state.withLock { state -> Bool in
            guard state.accepting else { return false }
            state.submitting += 1
            return true
        }
        guard admitted else { throw PipelineStopping(.refused, pipeline: definition.name) }
        telemetry.received(event, stage: definition.sourceID(naming: event.source))
        let held = await queue.send(event)
        state.withLock { $0.submitting -= 1 }
        guard held else { throw PipelineStopping(.refused, pipeline: definition.name) }
    }

    public func submitAndWait(_ event: Event) async throws -> EventReport {
        var event = event
        let (reports, continuation) = AsyncStream<EventReport>.makeStream()
        let previous = event.onComplete
        event.onComplete = { report in
            await previous?(report)
            continuation.yield(report)
            continuation.finish()
        }
        try await submit(event)
        for await report in reports { return report }
        throw PipelineStopping(.stoppedBeforeReport, pipeline: definition.name)
    }

    /// Asks `run` to stop: new events are refused and sources cancelled, the queue drains
    /// (for at most `drain_timeout` from now), then stages stop.
    public func stop() {
        stopContinuation.yield()
        stopContinuation.finish()
    }

    /// Events waiting for a worker (submits waiting for room, and the queue's buffer), and
    /// events workers are processing (read at each scrape).
    public var queued: Int { state.withLock { $0.submitting } + queue.counts.buffered }
    public var processing: Int { queue.counts.taken }
    public var room: Int { max(0, definition.delivery.concurrency - queued - processing) }
    /// Whether its sources started and it has not begun to stop.
    public var isRunning: Bool { started.load(ordering: .relaxed) }

    /// Returns once its sources started, or once its run ended if they never did.
    public func waitUntilStarted() async { await startLatch.wait() }

    public func run() async {
        defer { startLatch.open() }
        let store = processor.store
        // The processor's: what a source or a long-running stage prints goes where the runner's
        // caller asked, like the stdout transport's lines.
        let context = processor.pipelineContext
        await withTaskGroup(of: Void.self) { stages in
            for (id, key, stage) in definition.longRunningStages {
                stages.addTask { try? await stage.run(context: context.forStage(id, key: key)) }
            }
            let replays = QueuedEventIntake(lease: QueuedEventIntake.replayLease)
            let replayContext = context.forStage(QueuedEventIntake.replayKey, key: QueuedEventIntake.replayKey)
            var pruner = RetentionPruner(policy: definition.retention, store: store.pipeline(definition.name), logger: logger, clock: processor.clock)
            pruner.telemetry = telemetry.telemetry
            stages.addTask { await pruner.run() }
            stages.addTask { await replays.renewWhileRunning(context: replayContext) }
            let held = QueuedEventIntake(lease: QueuedEventIntake.replayLease, idle: QueuedEventIntake.heldPoll)
            let heldContext = context.forStage(QueuedEventIntake.heldKey, key: QueuedEventIntake.heldKey)
            stages.addTask { await held.renewWhileRunning(context: heldContext) }
            // Outcomes go on while the pipeline drains: those of its last events too.
            if let webhooks { stages.addTask { await webhooks.run() } }
            var stoppedAt = ContinuousClock.now
            await withTaskGroup(of: Bool.self) { workers in
                let workerCount = Self.workerCount(concurrency: definition.delivery.concurrency)
                let batchLimit = (definition.delivery.concurrency + workerCount - 1) / workerCount
                let executor = definition.workersExecutor
                for _ in 0..<workerCount {
                    workers.addTask(executorPreference: executor) {
                        await self.work(batchLimit: batchLimit)
                        return false
                    }
                }
                await withTaskGroup(of: Void.self) { sources in
                    for source in definition.sources {
                        sources.addTask(executorPreference: source.stage.preferredExecutor) {
                            do {
                                try await source.stage.run(
                                    into: SourceSink(runner: self, source: source.id),
                                    context: context.forStage(source.id, key: source.key)
                                )
                            } catch is CancellationError {
                            } catch {
                                self.logger.error("source \(source.id) (\(source.type)) stopped: \(error)")
                            }
                        }
                    }
                    // Dead letters replayed with `pushpipe dead-letters replay`, on whichever daemon claims them first.
                    sources.addTask {
                        await replays.claimWhileRunning(into: self, context: replayContext, announcing: "replayed dead letters")
                    }
                    // Events a timing filter held, as they fall due (`EventHold`).
                    sources.addTask { await held.claimWhileRunning(into: self, context: heldContext, announcing: "held events now due") }
                    logger.info("pipeline started", metadata: ["file": .string(definition.file)])
                    started.store(true, ordering: .relaxed)
                    startLatch.open()
                    for await _ in stopSignal { break }
                    started.store(false, ordering: .relaxed)
                    stoppedAt = .now
                    // A source waiting for room gets "stopping" at once: room comes only as fast as
                    // the transport frees it, and the drain's deadline must bound the whole stop.
                    refuseNewEvents()
                    sources.cancelAll()
                }
                logger.debug("stopping: sources ended; draining")
                // Workers finish the queued events; past the deadline they are cancelled.
                let deadline = definition.delivery.drainTimeout
                workers.addTask { [stoppedAt] in
                    try? await Task.sleep(until: stoppedAt + deadline)
                    return !Task.isCancelled
                }
                var finished = 0
                while let timedOut = await workers.next() {
                    if timedOut {
                        logger.warning("drain timeout of \(deadline.inSeconds)s reached; cancelling in-flight deliveries")
                        workers.cancelAll()
                        continue
                    }
                    finished += 1
                    if finished == workerCount { workers.cancelAll() }
                }
            }
            logger.debug("stopping: workers ended")
            stages.cancelAll()
        }
        logger.info("pipeline stopped")
    }

    /// Workers that share `delivery.concurrency` events. Fewer workers than events in flight:
    /// under load each takes many at once (one wake-up, one batch of requests, one write for
    /// all), while a few let one batch's round trip overlap the next.
    static func workerCount(concurrency: Int) -> Int {
        concurrency <= 4 ? max(1, concurrency) : min(16, max(4, concurrency / 32))
    }

    /// Takes events until the queue finishes. Retries and broadcasts go on in child tasks, so the
    /// worker takes the next batch meanwhile; it returns once they are done too.
    private func work(batchLimit: Int) async {
        await withDiscardingTaskGroup { followUps in
            while true {
                let events = await queue.next(upTo: batchLimit)
                if events.isEmpty { break }
                let started = await processor.start(events)
                finished(started.reports)
                for followUp in started.followUps {
                    followUps.addTask { self.finished(await self.processor.finish(followUp)) }
                }
            }
        }
    }

    private func finished(_ reports: [EventReport]) {
        guard !reports.isEmpty else { return }
        queue.done(reports.count)
        if let onEventCompleted { reports.forEach(onEventCompleted) }
    }

    /// Refuses new events and those waiting for room; workers finish what the queue holds.
    private func refuseNewEvents() {
        state.withLock { $0.accepting = false }
        queue.finish()
    }
}

/// What a source submits into: its events carry its id, for metrics and taps.
struct SourceSink: EventSink {
    let runner: PipelineRunner
    let source: String

    func submit(_ event: Event) async throws {
        try await runner.submit(fromSource(event))
    }

    func submitAndWait(_ event: Event) async throws -> EventReport {
        try await runner.submitAndWait(fromSource(event))
    }

    var room: Int { runner.room }

    private func fromSource(_ event: Event) -> Event {
        var event = event
        if event.source == nil { event.source = source }
        return event
    }
}
