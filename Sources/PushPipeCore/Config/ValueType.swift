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
    /// What to write instead of a value that names no variant but means something elsewhere
    /// (a route kind written as a source type), by that value.
    public var elsewhere: [String: String] = [:]

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
    /// The values a number, an integer or a duration (in seconds) may take: validation refuses
    /// the others where they are written, and the JSON Schema and the docs say so.
    public var range: ClosedRange<Double>?
    /// The only integers the key takes, for a code no range states (APNs priorities 1, 5, 10).
    public var allowed: [Int64]?
    public var doc: String

    /// A key with a default (or optional, when `defaultValue` is nil).
    public init(_ name: String, _ type: ValueType, default defaultValue: JSON? = nil, in range: ClosedRange<Double>? = nil, _ doc: String) {
        self.name = name
        self.type = type
        self.required = false
        self.defaultValue = defaultValue
        self.range = range
        self.doc = doc
    }

    /// An integer key that takes only `allowed`.
    public init(_ name: String, _ type: ValueType, default defaultValue: JSON? = nil, in allowed: [Int64], _ doc: String) {
        self.init(name, type, default: defaultValue, doc)
        self.allowed = allowed
    }

    /// Why a value the key does not admit is refused: outside its range, or not among its values.
    public func refusal(of value: JSON) -> String {
        "\(value.compactText) \(allowed == nil ? "is out of range" : "is not allowed")"
    }

    /// Whether `value` is within the key's range and among its allowed values.
    public func admits(_ value: Double) -> Bool {
        if let range, !range.contains(value) { return false }
        if let allowed, !allowed.contains(where: { Double($0) == value }) { return false }
        return true
    }

    public static func required(_ name: String, _ type: ValueType, in range: ClosedRange<Double>? = nil, _ doc: String) -> SchemaKey {
        var key = SchemaKey(name, type, in: range, doc)
        key.required = true
        return key
    }

    /// `range` as people read it: `1 to 64`, `1 or more`, `100ms to 30d` for a duration.
    public var rangeText: String? {
        if let allowed {
            let texts = allowed.map(String.init)
            return "one of " + (texts.count < 2 ? texts.joined() : texts.dropLast().joined(separator: ", ") + " or " + texts.last!)
        }
        guard let range else { return nil }
        let number: (Double) -> String = { value in
            guard case .duration = type else { return value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value) }
            return Self.durationText(value)
        }
        if range.upperBound == .infinity { return "\(number(range.lowerBound)) or more" }
        if range.lowerBound == -.infinity { return "at most \(number(range.upperBound))" }
        return "\(number(range.lowerBound)) to \(number(range.upperBound))"
    }

    /// Seconds in the largest unit that states them whole (`250ms`, `30s`, `5m`, `30d`).
    static func durationText(_ seconds: Double) -> String {
        for (unit, size) in [("d", 86400.0), ("h", 3600.0), ("m", 60.0), ("s", 1.0)]
        where seconds >= size && seconds.truncatingRemainder(dividingBy: size) == 0 {
            return "\(Int64(seconds / size))\(unit)"
        }
        return seconds < 1 ? "\(Int64((seconds * 1000).rounded()))ms" : "\(seconds)s"
    }
}
