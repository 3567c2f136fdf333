/// The type of one configuration value, as validation and `pushpipe stages` see it.
public indirect enum ValueType: Sendable {
    case string
    case integer
    case number
    case boolean
    /// `30s`, `5m`, `2h`, `250ms`, or a number of seconds.
    case duration
    case oneOf([String])
    case list(ValueType)
    /// Free keys, each value of the given type.
    case map(ValueType)
    case object(Schema)
    /// An object whose keys depend on a discriminator key (a stage's `type`, a route's `action`).
    case tagged(Tagged)
    /// Any YAML value, kept as JSON (templates, payload skeletons).
    case any

    public var name: String {
        switch self {
        case .string: "string"
        case .integer: "integer"
        case .number: "number"
        case .boolean: "boolean"
        case .duration: "duration"
        case .oneOf(let values): "one of " + values.joined(separator: ", ")
        case .list(let element): "list of \(element.name)"
        case .map(let value): "map of \(value.name)"
        case .object: "object"
        case .tagged(let tagged): "object with '\(tagged.discriminator)'"
        case .any: "any value"
        }
    }
}

/// Variants of an object told apart by one key.
public struct Tagged: Sendable {
    public var discriminator: String
    /// What the discriminator names (`stage type`, `route action`), for messages.
    public var noun: String
    public var variants: [String: Schema]
    /// Keys every variant accepts besides its own.
    public var common: Schema
    /// Used when the discriminator is absent; `nil` makes it required.
    public var defaultVariant: String?
    /// The diagnostic code of a value that names no variant.
    public var unknownCode: Diagnostic.Code

    public init(
        discriminator: String,
        noun: String,
        variants: [String: Schema],
        common: Schema = Schema(),
        defaultVariant: String? = nil,
        unknownCode: Diagnostic.Code = .invalidValue
    ) {
        self.discriminator = discriminator
        self.noun = noun
        self.variants = variants
        self.common = common
        self.defaultVariant = defaultVariant
        self.unknownCode = unknownCode
    }
}

/// The keys of a configuration object. Stage configurations declare one next to their
/// `Decodable` struct; plugin manifests declare theirs in YAML.
public struct Schema: Sendable {
    public var keys: [SchemaKey]
    public init(_ keys: [SchemaKey] = []) { self.keys = keys }

    public func key(named name: String) -> SchemaKey? { keys.first { $0.name == name } }
    public var keyNames: [String] { keys.map(\.name) }

    public static func + (lhs: Schema, rhs: Schema) -> Schema { Schema(lhs.keys + rhs.keys) }
}

public struct SchemaKey: Sendable {
    public var name: String
    public var type: ValueType
    public var required: Bool
    public var defaultValue: JSON?
    public var doc: String

    /// A key with a default (or optional, when `defaultValue` is nil).
    public init(_ name: String, _ type: ValueType, default defaultValue: JSON? = nil, _ doc: String) {
        self.name = name
        self.type = type
        self.required = false
        self.defaultValue = defaultValue
        self.doc = doc
    }

    public static func required(_ name: String, _ type: ValueType, _ doc: String) -> SchemaKey {
        var key = SchemaKey(name, type, doc)
        key.required = true
        return key
    }
}
