import Logging

/// What a stage may use besides its configuration.
public struct StageContext: Sendable {
    public var pipeline: String
    /// Where the stage is in its pipeline (`filters[0]`, `renderer`): its name in logs, metrics and the tap.
    public var stage: String
    /// What keys its durable state: a source's `key` (or type), which stays when the file is
    /// reordered; the other stages' `stage`.
    public var key: String
    public var store: any Store
    public var logger: Logger
    public var mode: RunMode
    /// While a broadcast (an event for every user) is rendered page by page: the users of
    /// this page, so a renderer's `tokens(for:kind:)` returns only theirs.
    public var broadcastUsers: ClosedRange<String>?
    /// Where a stage counts what only it knows (a poller's checks, a plugin's restarts).
    public var telemetry: Telemetry
    /// Where a stage that prints (the stdout transport) writes: the runner's output, so a test
    /// or a benchmark can capture or discard it like the dry run's.
    public var output: OutputSink
    /// What the stage reads the time from and waits on (a poller's interval, a watermark's hold).
    public var clock: any DaemonClock
    /// While a batch is filtered: its users' settings, read at once (`SettingsAhead`).
    package var settingsAhead: SettingsAhead?

    public init(
        pipeline: String,
        stage: String,
        key: String? = nil,
        store: any Store,
        logger: Logger,
        mode: RunMode,
        telemetry: Telemetry = .unobserved,
        output: OutputSink = .standardOutput,
        clock: any DaemonClock = .system
    ) {
        self.clock = clock
        self.pipeline = pipeline
        self.stage = stage
        self.key = key ?? stage
        self.store = store
        self.logger = logger
        self.mode = mode
        self.telemetry = telemetry
        self.output = output
    }

    /// The store by concern: a stage uses the part it needs, so what it may touch shows.
    /// One handle on the pipeline's part (`PipelineStore`), named by concern at the call site.
    public var registrations: any PipelineStore { store.pipeline(pipeline) }
    public var deliveries: any PipelineStore { store.pipeline(pipeline) }
    public var queuedEvents: any PipelineStore { store.pipeline(pipeline) }
    public var stageState: any PipelineStore { store.pipeline(pipeline) }
    public var work: any WorkQueue { store.pipeline(pipeline).work }
    public var retention: any PipelineStore { store.pipeline(pipeline) }

    /// A user's setting: from the batch's read-ahead when it holds the user, else the store.
    public func setting(user: String, key: String) async throws -> JSON? {
        if let settings = settingsAhead?[user] { return settings[key] }
        return try await registrations.setting(user: user, key: key)
    }

    /// A user's settings: from the batch's read-ahead when it holds the user, else the store.
    public func settings(user: String) async throws -> [String: JSON] {
        if let settings = settingsAhead?[user] { return settings }
        return try await registrations.settings(user: user)
    }

    /// Counts a stage metric, labelled with this pipeline and stage (and `labels`).
    public func count(_ metric: Metric, _ labels: [(String, String)] = [], by amount: Int = 1) {
        telemetry.increment(metric, [("pipeline", pipeline), ("stage", stage)] + labels, by: amount)
    }

    public func forStage(_ stage: String, key: String? = nil) -> StageContext {
        var copy = self
        copy.stage = stage
        copy.key = key ?? stage
        copy.logger[metadataKey: "stage"] = .string(stage)
        return copy
    }

    /// The tokens of one kind an event should go to: its user's, or, when the event names no
    /// user, those of the broadcast's current page of users.
    public func tokens(for event: Event, kind: String) async throws -> [DeviceToken] {
        if event.user == nil, let broadcastUsers {
            return try await registrations.tokens(kind: kind, users: broadcastUsers)
        }
        return try await registrations.tokens(user: event.user, kind: kind)
    }
}
