/// A validated pipeline with its stages constructed but not started.
public struct PipelineDefinition: Sendable {
    public struct Stage<S: Sendable>: Sendable {
        /// `filters[0]`, `renderer`: where the stage is in its file, for logs and diagnostics.
        public var id: String
        public var type: String
        public var stage: S
        /// What keys the stage's durable state (queued events, schedules, watermarks). A source's
        /// is its `key` or its type, so reordering or adding sources leaves what it queued
        /// where it finds it; the other stages' is their `id`.
        public var key: String

        public init(id: String, type: String, stage: S, key: String? = nil) {
            self.id = id
            self.type = type
            self.stage = stage
            self.key = key ?? id
        }
    }

    public struct DeclaredSharedState: Sendable {
        public var state: SharedState
        public var location: SourceLocation
        public var keyPath: String
    }

    public struct DeclaredRoute: Sendable {
        public var route: RouteDefinition
        public var location: SourceLocation
        public var keyPath: String
    }

    public var name: String
    public var file: String
    public var description: String?
    /// Changes whenever anything that matters for running changes (file content after
    /// interpolation, the plugins it uses): reload restarts only pipelines whose fingerprint moved.
    public var fingerprint: String
    public var sources: [Stage<any Source>]
    public var filters: [Stage<any Filter>]
    public var renderer: Stage<any Renderer>
    public var transport: Stage<any Transport>
    public var routes: [DeclaredRoute]
    /// State its stages share with other pipelines' (`SharedState`), where each is declared.
    public var sharedStates: [DeclaredSharedState] = []
    public var delivery: DeliveryPolicy
    public var retention: RetentionPolicy = .defaults
    public var idempotency: IdempotencyPolicy = .defaults
    public var webhooks: [WebhookTarget] = []
    /// What route kinds run beside their routes (a client their handlers share), by entry.
    public var routeServices: [Stage<any LongRunningStage>] = []
    public var location: SourceLocation

    /// The id of the source an event's `source` names (its id, or its key when the event was
    /// queued): metrics and the tap name sources by where they are in the file, like every stage.
    func sourceID(naming name: String?) -> String {
        guard let name else { return sources.first?.id ?? "sources" }
        return sources.first { $0.id == name || $0.key == name }?.id ?? name
    }

    public var longRunningStages: [(id: String, key: String, stage: any LongRunningStage)] {
        var stages: [(String, String, any LongRunningStage)] = []
        for source in sources { if let stage = source.stage as? any LongRunningStage { stages.append((source.id, source.key, stage)) } }
        for filter in filters { if let stage = filter.stage as? any LongRunningStage { stages.append((filter.id, filter.key, stage)) } }
        if let stage = renderer.stage as? any LongRunningStage { stages.append((renderer.id, renderer.key, stage)) }
        if let stage = configuredTransport as? any LongRunningStage { stages.append((transport.id, transport.key, stage)) }
        return stages + routeServices.map { ($0.id, $0.key, $0.stage) }
    }

    /// Where the workers run: the transport's choice, else the executor every source names
    /// (`Source.preferredExecutor`) if they agree on one, else Swift's pool. Swift's pool is
    /// returned as nil, no preference: a task that names it pays a locked look-up of its
    /// preference at every resumption.
    var workersExecutor: (any TaskExecutor)? {
        let choice = transport.stage.preferredExecutor ?? sourcesExecutor
        return choice === globalConcurrentExecutor ? nil : choice
    }

    private var sourcesExecutor: (any TaskExecutor)? {
        guard let first = sources.first?.stage.preferredExecutor else { return nil }
        return sources.allSatisfy { $0.stage.preferredExecutor === first } ? first : nil
    }
}
