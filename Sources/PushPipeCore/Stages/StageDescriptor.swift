/// How to make a stage of one type: its documented keys and its factory.
public struct StageDescriptor: Sendable {
    public enum Origin: Sendable, Equatable {
        case builtin
        case plugin(directory: String)
    }

    public var kind: StageKind
    public var type: String
    public var summary: String
    public var schema: Schema
    public var origin: Origin
    /// The formats of the tokens a transport sends to, for the routes that register them.
    public var tokenFormats: [any TokenFormat] = []
    let factory: @Sendable (JSON, StageBuildContext) throws -> AnyStage

    public init(
        kind: StageKind,
        type: String,
        summary: String,
        schema: Schema,
        origin: Origin = .builtin,
        factory: @escaping @Sendable (JSON, StageBuildContext) throws -> AnyStage
    ) {
        self.kind = kind
        self.type = type
        self.summary = summary
        self.schema = schema
        self.origin = origin
        self.factory = factory
    }

    /// This descriptor, describing the formats of its tokens.
    public func describing(tokens formats: [any TokenFormat]) -> StageDescriptor {
        var described = self
        described.tokenFormats = formats
        return described
    }

    public func make(configuration: JSON, context: StageBuildContext) throws -> AnyStage {
        try factory(configuration, context)
    }

    public static func source<C: StageConfiguration>(
        _ type: String,
        _ summary: String,
        _ configuration: C.Type,
        make: @escaping @Sendable (C, StageBuildContext) throws -> any Source
    ) -> StageDescriptor {
        StageDescriptor(kind: .source, type: type, summary: summary, schema: C.schema) { json, context in
            .source(try make(try C.schema.decode(C.self, from: json), context))
        }
    }

    public static func filter<C: StageConfiguration>(
        _ type: String,
        _ summary: String,
        _ configuration: C.Type,
        make: @escaping @Sendable (C, StageBuildContext) throws -> any Filter
    ) -> StageDescriptor {
        StageDescriptor(kind: .filter, type: type, summary: summary, schema: C.schema) { json, context in
            .filter(try make(try C.schema.decode(C.self, from: json), context))
        }
    }

    public static func renderer<C: StageConfiguration>(
        _ type: String,
        _ summary: String,
        _ configuration: C.Type,
        make: @escaping @Sendable (C, StageBuildContext) throws -> any Renderer
    ) -> StageDescriptor {
        StageDescriptor(kind: .renderer, type: type, summary: summary, schema: C.schema) { json, context in
            .renderer(try make(try C.schema.decode(C.self, from: json), context))
        }
    }

    public static func transport<C: StageConfiguration>(
        _ type: String,
        _ summary: String,
        _ configuration: C.Type,
        make: @escaping @Sendable (C, StageBuildContext) throws -> any Transport
    ) -> StageDescriptor {
        StageDescriptor(kind: .transport, type: type, summary: summary, schema: C.schema) { json, context in
            .transport(try make(try C.schema.decode(C.self, from: json), context))
        }
    }
}

/// What a factory may know while constructing a stage (nothing that starts work).
public struct StageBuildContext: Sendable {
    public var pipeline: String
    /// Key path of the stage in its file (`filters[1]`), for errors.
    public var stage: String
    /// What keys the stage's durable state (see `StageContext.key`).
    public var key: String
    /// Where requests to URLs users chose may go (`--allow-private-endpoint`).
    public var egress: EgressPolicy

    public init(pipeline: String, stage: String, key: String? = nil, egress: EgressPolicy = .standard) {
        self.pipeline = pipeline
        self.stage = stage
        self.key = key ?? stage
        self.egress = egress
    }
}
