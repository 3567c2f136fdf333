/// A validated pipeline with its stages constructed but not started.
public struct PipelineDefinition: Sendable {
    public struct Stage<S: Sendable>: Sendable {
        /// `filters[0]`, `renderer`: names the stage in logs and keys its durable state.
        public var id: String
        public var type: String
        public var stage: S
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
    public var delivery: DeliveryPolicy
    public var retention: RetentionPolicy = .defaults
    public var location: SourceLocation

    /// Every stage that keeps resources for its life.
    public var longRunningStages: [(id: String, stage: any LongRunningStage)] {
        var stages: [(String, any LongRunningStage)] = []
        for source in sources { if let stage = source.stage as? any LongRunningStage { stages.append((source.id, stage)) } }
        for filter in filters { if let stage = filter.stage as? any LongRunningStage { stages.append((filter.id, stage)) } }
        if let stage = renderer.stage as? any LongRunningStage { stages.append((renderer.id, stage)) }
        if let stage = transport.stage as? any LongRunningStage { stages.append((transport.id, stage)) }
        return stages
    }

    /// Where the workers run: the transport's choice, else the executor every source names
    /// (`Source.preferredExecutor`) if they agree on one, else Swift's pool. Swift's pool is
    /// returned as nil, no preference: a task that names it pays a locked look-up of its
    /// preference at every resumption (4% of the APNs path's samples).
    var workersExecutor: (any TaskExecutor)? {
        let choice = transport.stage.preferredExecutor ?? sourcesExecutor
        return choice === globalConcurrentExecutor ? nil : choice
    }

    private var sourcesExecutor: (any TaskExecutor)? {
        guard let first = sources.first?.stage.preferredExecutor else { return nil }
        return sources.allSatisfy { $0.stage.preferredExecutor === first } ? first : nil
    }
}
