public enum RunMode: Sendable, Equatable {
    /// Sends for real.
    case live
    /// Prints instead of sending; records nothing as delivered.
    case dryRun

    /// The store the pipelines of this mode work on: a dry run's keeps what they would write
    /// to itself (`DryRunStore`). The one place the runtime tells the modes apart.
    public func store(_ store: any Store) -> any Store {
        switch self {
        case .live: store
        case .dryRun: store is DryRunStore ? store : DryRunStore(base: store)
        }
    }

    /// Who is told of outcomes: nobody in a dry run, where nothing was sent.
    public func webhookPoster(_ poster: (any WebhookPoster)?) -> (any WebhookPoster)? {
        self == .live ? poster : nil
    }

    /// The pipeline as this mode runs it: a dry run's transport prints (`PrintingTransport`).
    public func pipeline(_ definition: PipelineDefinition) -> PipelineDefinition {
        guard self == .dryRun, !(definition.transport.stage is PrintingTransport) else { return definition }
        var printing = definition
        printing.transport.stage = PrintingTransport(base: definition.transport.stage, pipeline: definition.name)
        return printing
    }
}

extension PipelineDefinition {
    /// The transport as configured, under a dry run's printing decorator: what validates tokens
    /// for the routes and runs beside the pipeline (a plugin's process) in either mode.
    public var configuredTransport: any Transport {
        (transport.stage as? PrintingTransport)?.base ?? transport.stage
    }
}
