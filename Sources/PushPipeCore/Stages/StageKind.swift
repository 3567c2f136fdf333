public enum StageKind: String, Sendable, CaseIterable, Codable {
    case source, filter, renderer, transport
}

/// A constructed stage of any kind.
public enum AnyStage: Sendable {
    case source(any Source)
    case filter(any Filter)
    case renderer(any Renderer)
    case transport(any Transport)

    public var kind: StageKind {
        switch self {
        case .source: .source
        case .filter: .filter
        case .renderer: .renderer
        case .transport: .transport
        }
    }

    /// The stage's own long-running part, if it has one.
    var longRunning: (any LongRunningStage)? {
        switch self {
        case .source(let stage): stage as? any LongRunningStage
        case .filter(let stage): stage as? any LongRunningStage
        case .renderer(let stage): stage as? any LongRunningStage
        case .transport(let stage): stage as? any LongRunningStage
        }
    }
}
