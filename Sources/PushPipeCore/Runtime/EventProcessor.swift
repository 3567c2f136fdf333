import Foundation
import Logging
import Tracing

/// Runs events through a pipeline's filters, renderer and transport, and applies the
/// outcomes: retries with backoff, dead-token pruning, history, watermark commits.
/// The daemon, `pushpipe dry-run` and `pushpipe test` all use it, so they cannot disagree.
public struct EventProcessor: Sendable {
    public let definition: PipelineDefinition
    public let store: any Store
    /// The pipeline's part of `store`.
    let pipelineStore: any PipelineStore
    public let logger: Logger
    public let mode: RunMode
    public let output: OutputSink
    public let telemetry: PipelineTelemetry
    /// What backoff waits on and records are stamped with.
    public let clock: any DaemonClock
    /// nil: tracing is off, and no span is made.
    let tracer: EventTracer?
    let spanNames: SpanNames?
    /// `delivery.max_rate` and a provider's pause, shared by every task of the pipeline.
    let gate: TransportGate
    /// Called with every prepared request (pipeline tests collect them).
    public var onRequest: (@Sendable (OutgoingRequest) -> Void)?
    /// Called after outcomes for webhooks were written (the dispatcher sends them at once).
    var onWebhookOutcomes: (@Sendable () -> Void)?
    let reportedConfigErrors = RepeatedMessages(window: nil)
    let repeatedFailures = RepeatedMessages(window: .seconds(10))
    /// When the writes of a stop give up (`recordGrace` after the first is cancelled).
    let stopDeadline = StopDeadline()
    /// The pipeline's own context (what its sources and long-running stages are given), and
    /// each stage's, made once: they are the same for every event.
    let pipelineContext: StageContext
    private let filterContexts: [StageContext]
    /// Whether a filter reads its event's user's settings: a batch's are then read at once.
    private let filtersReadSettings: Bool
    let rendererContext: StageContext
    let transportContext: StageContext

    public init(
        definition: PipelineDefinition,
        store: any Store,
        logger: Logger,
        mode: RunMode,
        output: OutputSink = .standardOutput,
        telemetry: Telemetry = .unobserved,
        clock: any DaemonClock = .system
    ) {
        // A dry run is a printing transport and a store that keeps nothing sent: the one place it differs.
        let definition = mode.pipeline(definition)
        let store = mode.store(store)
        self.definition = definition
        self.clock = clock
        self.store = store
        pipelineStore = store.pipeline(definition.name)
        self.logger = logger
        self.mode = mode
        self.output = output
        self.telemetry = PipelineTelemetry(telemetry: telemetry, definition: definition)
        tracer = telemetry.tracer
        spanNames = telemetry.tracer == nil ? nil : SpanNames(definition)
        gate = TransportGate(rate: try? definition.delivery.sendRate(), clock: clock)
        let context = StageContext(
            pipeline: definition.name,
            stage: "pipeline",
            store: store,
            logger: logger,
            mode: mode,
            telemetry: telemetry,
            output: output,
            clock: clock
        )
        pipelineContext = context
        filterContexts = definition.filters.map { context.forStage($0.id, key: $0.key) }
        filtersReadSettings = definition.filters.contains { $0.stage.readsUserSettings }
        rendererContext = context.forStage(definition.renderer.id, key: definition.renderer.key)
        transportContext = context.forStage(definition.transport.id, key: definition.transport.key)
    }

    public func process(_ incoming: Event) async -> EventReport {
        let started = await start([incoming])
        if let report = started.reports.first { return report }
        return await finish(started.followUps[0])[0]
    }

    /// What `start` did with a batch of events: the reports of those it finished, and the work
    /// left for the others.
    struct Started: Sendable {
        var reports: [EventReport]
        var followUps: [FollowUp]
    }

    /// Work that outlasts a batch's first attempts: retries with backoff, or a broadcast's pages.
    /// Each runs on its own (`finish`), so it holds up neither the worker nor the other events.
    enum FollowUp: Sendable {
        case retries([Delivering])
        case broadcast(Event)

        /// Events it finishes.
        var events: Int {
            switch self {
            case .retries(let deliverings): deliverings.count
            case .broadcast: 1
            }
        }
    }

    /// An event as the last filter passed it, with its report and its recipients' outcomes,
    /// and whether its record is written already (with its deliveries).
    struct Finished: Sendable {
        var event: Event
        var report: EventReport
        var recipients = RecipientList()
        var recorded = false
    }

    /// Events a worker took together: each goes through the filters on its own, then the
    /// notifications of all events for one user are sent together, and the events whose
    /// deliveries settled at once are recorded in one write. The events finished here complete
    /// (`onComplete`) together.
    func start(_ batch: [Event]) async -> Started {
        var finished: [Finished] = []
        var followUps: [FollowUp] = []
        var forUsers: [Event] = []
        let contexts = await filterContexts(for: batch)
        for var event in batch {
            if let tracer, let spanNames, let trace = tracer.begin(event, pipeline: definition.name, names: spanNames) { event.trace = trace }
            switch await filter(event, contexts: contexts) {
            case .finished(let report, let final):
                finished.append(Finished(event: final, report: report))
            case .held(let held, let hold, let stage):
                finished.append(Finished(event: held, report: await keep(held, hold, stage: stage)))
            case .passed(let passed):
                if passed.user == nil {
                    followUps.append(.broadcast(passed))
                } else {
                    forUsers.append(passed)
                }
            }
        }
        if !forUsers.isEmpty {
            let (delivered, retrying) = await deliverToUsers(forUsers)
            finished += delivered
            if !retrying.isEmpty { followUps.append(.retries(retrying)) }
        }
        return Started(reports: await complete(finished), followUps: followUps)
    }

    /// Runs what `start` left and completes those events.
    func finish(_ followUp: FollowUp) async -> [EventReport] {
        switch followUp {
        case .retries(var deliverings):
            await recordProcessing(deliverings)
            await retry(&deliverings)
            return await complete(await finishForUsers(deliverings))
        case .broadcast(let event):
            var recipients = RecipientList()
            let report = await broadcast(event, recipients: &recipients)
            return await complete([Finished(event: event, report: report, recipients: recipients)])
        }
    }

    /// Records the events not recorded yet and removes from their queue those still in one, in
    /// one commit (unless cancelled, a drain timeout: what was cut short stays queued and is
    /// sent again), then calls their completions, all at once: one after the other, their own
    /// writes each waited for the last one's commit instead of sharing one. Filters may have
    /// chained their own completion (the dedupe filter releases what it holds in flight).
    /// Returns the reports.
    private func complete(_ finished: [Finished]) async -> [EventReport] {
        var finished = finished
        let records = finished.flatMap { $0.recorded ? [] : eventRecords($0) }
        let queued = Task.isCancelled ? [] : finished.indices.filter { !finished[$0].report.leftQueue && finished[$0].event.queueItem != nil }
        // A broadcast's last progress (every page went out, or where it stopped) with its record.
        let cursors = finished.compactMap { done in done.recorded ? nil : done.recipients.progress.map { cursor(done.event, $0) } }
        if !records.isEmpty || !queued.isEmpty || !cursors.isEmpty,
            await record([], events: records, finishing: queued.compactMap { finished[$0].event.queueItem }, progress: cursors)
        {
            for index in queued { finished[index].report.leftQueue = true }
        }
        if tracer != nil {
            for event in finished { event.event.trace?.end(event.report) }
        }
        let waiting = finished.filter { $0.event.onComplete != nil }
        if waiting.count == 1, let onComplete = waiting[0].event.onComplete {
            await onComplete(waiting[0].report)
        } else if waiting.count > 1 {
            await withDiscardingTaskGroup { group in
                for finished in waiting {
                    let report = finished.report
                    // Started here, at once: a completion that never waits ends before the next
                    // starts, with no task scheduled on the pool and no thread woken for it (a
                    // task per event costs both); one that waits (a store write) leaves its task
                    // waiting and the next begins, so their writes still share a commit.
                    if let onComplete = finished.event.onComplete { group.addImmediateTask { await onComplete(report) } }
                }
            }
        }
        return finished.map(\.report)
    }

    enum Filtered {
        case passed(Event)
        case finished(EventReport, Event)
        /// A filter said "not yet" (`FilterResult.hold`): `stage` is its id.
        case held(Event, EventHold, stage: String)
    }

    /// The filters' contexts for a batch: those of the filters that read settings hold the
    /// batch's users' settings, read in one go. Without such a filter, with one event, or
    /// when that read fails, the filters read each user's as before.
    private func filterContexts(for batch: [Event]) async -> [StageContext] {
        guard batch.count > 1, filtersReadSettings else { return filterContexts }
        var seen = Set<[UInt8]>()
        // A user the store keeps under other bytes is read alone, by its own.
        let users = batch.compactMap(\.user).filter { StoredText.keepsAsIs($0) && seen.insert(Array($0.utf8)).inserted }
        guard !users.isEmpty else { return filterContexts }
        let settings: [[String: JSON]]
        do {
            settings = try await pipelineContext.registrations.settings(of: users)
        } catch {
            logger.debug("the batch's settings were not read ahead: \(error)")
            return filterContexts
        }
        let ahead = SettingsAhead(users: users, settings: settings, clock: clock)
        return zip(definition.filters, filterContexts).map { filter, context in
            guard filter.stage.readsUserSettings else { return context }
            var withAhead = context
            withAhead.settingsAhead = ahead
            return withAhead
        }
    }

    private func filter(_ incoming: Event, contexts: [StageContext]) async -> Filtered {
        var event = incoming
        if !definition.filters.isEmpty { event.receivedBody = incoming.body }
        for (index, (filter, filterContext)) in zip(definition.filters, contexts).enumerated() {
            let span = event.trace?.child(spanNames?.filters[index] ?? filter.id)
            span?.attributes["pushpipe.stage.type"] = filter.type
            defer { span?.end() }
            do {
                let input = event
                switch try await waitingForTheStore(input, { try await filter.stage.apply(to: input, context: filterContext) }) {
                case .pass(let passed):
                    event = passed
                    telemetry.passed(event, stage: filter.id, type: filter.type)
                case .drop(let reason, let code, let kind):
                    span?.attributes["pushpipe.drop.code"] = code
                    telemetry.dropped(event, stage: filter.id, type: filter.type, reason: reason, code: code)
                    logger.debug("event filtered by \(filter.id) (\(filter.type)): \(reason)", metadata: Self.metadata(event))
                    return .finished(
                        EventReport(
                            eventID: event.id,
                            pipeline: definition.name,
                            user: event.user,
                            status: EventReport.Status(rawValue: kind.rawValue) ?? .filtered,
                            reason: "\(filter.type): \(reason)",
                            stage: filter.id,
                            code: code
                        ),
                        event
                    )
                case .batched(let hold):
                    span?.attributes["pushpipe.hold.code"] = hold.code
                    telemetry.held(event, stage: filter.id, type: filter.type, hold)
                    return .finished(heldReport(event, hold, stage: filter.id), event)
                case .recur(let occurrence, let next):
                    span?.attributes["pushpipe.hold.code"] = next.code
                    telemetry.held(event, stage: filter.id, type: filter.type, next)
                    if let failure = await keepForNext(event, next, stage: filter.id, recording: occurrence != nil) {
                        return .finished(failure, event)
                    }
                    guard let occurrence else { return .finished(heldReport(event, next, stage: filter.id), event) }
                    event = occurrence
                    telemetry.passed(event, stage: filter.id, type: filter.type)
                case .split(let copies):
                    for (copy, hold) in copies { telemetry.held(copy, stage: filter.id, type: filter.type, hold) }
                    return .finished(await keepCopies(copies, of: event, stage: filter.id), event)
                case .hold(let hold):
                    span?.attributes["pushpipe.hold.code"] = hold.code
                    telemetry.held(event, stage: filter.id, type: filter.type, hold)
                    logger.debug("event held by \(filter.id) (\(filter.type)): \(hold.reason)", metadata: Self.metadata(event))
                    return .held(event, hold, stage: filter.id)
                }
            } catch {
                span?.recordError(error)
                span?.setStatus(SpanStatus(code: .error))
                return .finished(failed(event, "\(filter.id) (\(filter.type)): \(error)", stage: filter.id), event)
            }
        }
        return .passed(event)
    }

    func failed(_ event: Event, _ reason: String, stage: String) -> EventReport {
        logger.error("event \(event.id) failed: \(reason)", metadata: Self.metadata(event))
        telemetry.failed(event, stage: stage, reason: reason)
        return EventReport(eventID: event.id, pipeline: definition.name, user: event.user, status: .failed, reason: reason, stage: stage)
    }

    func noRecipients(_ event: Event) -> EventReport {
        telemetry.noRecipients(event, stage: definition.renderer.id)
        return EventReport(
            eventID: event.id,
            pipeline: definition.name,
            user: event.user,
            status: .noRecipients,
            reason: "no registered token for \(event.user.map { "user \($0)" } ?? "any user")",
            stage: definition.renderer.id,
            code: "no_recipients"
        )
    }

    func finalReport(_ event: Event, _ tally: DeliveryTally) -> EventReport {
        let status = tally.status
        logger.debug("event \(status.rawValue): \(tally.delivered) of \(tally.total) deliveries accepted", metadata: Self.metadata(event))
        return EventReport(
            eventID: event.id,
            pipeline: definition.name,
            user: event.user,
            status: status,
            reason: tally.unresolvedReason,
            deliveries: tally.reports,
            omittedDeliveries: tally.total > tally.reports.count ? tally.total - tally.reports.count : nil
        )
    }

    /// A log line's context, built only when the line is written: making a logger with
    /// metadata per event and per delivery would cost an allocation each on the hot path.
    static func metadata(_ event: Event, token: DeviceToken? = nil, stage: String? = nil) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["event": .string(event.id)]
        if let traceID = event.trace?.traceID { metadata["trace_id"] = .string(traceID) }
        if let token { metadata["token"] = .string(token.masked) }
        if let stage { metadata["stage"] = .string(stage) }
        return metadata
    }
}
