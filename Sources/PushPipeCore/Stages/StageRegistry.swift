/// Every stage type pushpipe knows, by kind and type name: built-ins and plugins alike.
public struct StageRegistry: Sendable {
    private var descriptors: [StageKind: [String: StageDescriptor]] = [:]
    /// The token formats the stages describe (`StageDescriptor.tokenFormats`), and the core's.
    public private(set) var tokenFormats = TokenFormats()
    /// What a `routes:` entry may do: the core's route kinds, with the registry's token
    /// formats, then those registered.
    public private(set) var routeActions = RouteAction.builtins(formats: TokenFormats())
    private var registeredRoutes: [RouteAction] = []

    public init(_ entries: [any Registrable] = []) {
        // Each descriptor that describes tokens updates the formats as it is registered.
        for entry in entries { entry.register(in: &self) }
    }

    public func routeAction(named name: String) -> RouteAction? {
        routeActions.first { $0.name == name }
    }

    /// Collects the descriptors' token formats, and lets logs mask their tokens (`TokenMask`).
    private mutating func describeTokens() {
        let formats = descriptors.values.flatMap(\.values).sorted { $0.type < $1.type }.flatMap(\.tokenFormats)
        tokenFormats = TokenFormats(formats)
        routeActions = RouteAction.builtins(formats: tokenFormats) + registeredRoutes
        TokenMask.adopt(formats)
    }

    /// Adds a kind of route; returns the existing one instead when the name is taken.
    @discardableResult
    public mutating func register(_ action: RouteAction) -> RouteAction? {
        if let existing = routeAction(named: action.name) { return existing }
        registeredRoutes.append(action)
        routeActions.append(action)
        return nil
    }

    public func descriptor(kind: StageKind, type: String) -> StageDescriptor? {
        descriptors[kind]?[type]
    }

    /// Adds a stage type; returns the existing descriptor instead when the name is taken.
    @discardableResult
    public mutating func register(_ descriptor: StageDescriptor) -> StageDescriptor? {
        if let existing = descriptors[descriptor.kind]?[descriptor.type] { return existing }
        descriptors[descriptor.kind, default: [:]][descriptor.type] = descriptor
        if !descriptor.tokenFormats.isEmpty { describeTokens() }
        return nil
    }

    public func all(kind: StageKind) -> [StageDescriptor] {
        (descriptors[kind] ?? [:]).values.sorted { $0.type < $1.type }
    }

    /// The schema of "a stage of this kind": its `type` chooses the variant.
    public func stageType(kind: StageKind) -> ValueType {
        let variants = (descriptors[kind] ?? [:]).mapValues(\.schema)
        var tagged = Tagged(
            discriminator: "type",
            noun: "\(kind.rawValue) type",
            variants: variants,
            common: kind == .source ? Self.sourceCommon : Schema(),
            unknownCode: .unknownStageType
        )
        // A route kind written under `sources:` is refused with where it goes.
        if kind == .source {
            for action in routeActions {
                tagged.elsewhere[action.name] = "'\(action.name)' is a route kind: declare it under `routes:` with `action: \(action.name)`"
            }
        }
        return .tagged(tagged)
    }

    /// Keys every source accepts.
    static let sourceCommon = Schema([
        SchemaKey(
            "key",
            .string,
            "Names the source's durable state (queued events, poll schedule); defaults to its type. "
                + "Give one to each of two sources of a type; keep it when the pipeline is edited."
        )
    ])
}
