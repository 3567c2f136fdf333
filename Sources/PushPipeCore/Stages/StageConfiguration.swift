import Foundation

/// A stage's configuration: a `Decodable` struct whose keys are described by `schema`.
///
/// Validation runs against the schema first (positions, all errors, defaults filled), so
/// decoding only ever sees complete, well-typed input. YAML keys are snake_case; the
/// struct's properties are their camelCase forms.
public protocol StageConfiguration: Decodable, Sendable {
    static var schema: Schema { get }
}

/// A configuration value that passed the schema but makes no sense (a template that does
/// not parse, a start event without an alert). Becomes a diagnostic at `keyPath`.
public struct ConfigurationValueError: Error, Sendable {
    public var keyPath: String
    public var message: String
    public var expected: String?

    public init(keyPath: String, _ message: String, expected: String? = nil) {
        self.keyPath = keyPath
        self.message = message
        self.expected = expected
    }
}

extension Schema {
    /// Decodes validated configuration into `T`, converting schema keys to camelCase. A
    /// configuration made in code, not read from a file, meets the keys' ranges here too.
    public func decode<T: Decodable>(_ type: T.Type, from json: JSON) throws -> T {
        try checkRanges(json)
        return try camelCased(withDefaults(json)).decode(T.self)
    }

    /// `json` with the default of every key it leaves out: what validation fills in, for a
    /// configuration made in code.
    public func withDefaults(_ json: JSON) -> JSON {
        guard case .object(var members) = json else { return json }
        for key in keys where members[key.name] == nil {
            if let value = key.defaultValue { members[key.name] = value }
        }
        return .object(members)
    }

    /// Throws for the first key whose number is outside its range.
    public func checkRanges(_ json: JSON) throws {
        for key in keys {
            guard let value = json[key.name]?.doubleValue ?? json[Schema.camelCase(key.name)]?.doubleValue else { continue }
            guard key.admits(value) else {
                throw ConfigurationValueError(keyPath: key.name, key.refusal(of: .double(value)), expected: key.rangeText)
            }
        }
    }

    func camelCased(_ json: JSON) -> JSON {
        guard case .object(let members) = json else { return json }
        var result: [String: JSON] = [:]
        for (key, value) in members {
            let converted = self.key(named: key).map { $0.type.camelCased(value) } ?? value
            result[Schema.camelCase(key)] = converted
        }
        return .object(result)
    }

    public static func camelCase(_ key: String) -> String {
        let parts = key.split(whereSeparator: { $0 == "_" || $0 == "-" })
        guard let first = parts.first else { return key }
        return String(first) + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }
}

extension ValueType {
    func camelCased(_ json: JSON) -> JSON {
        switch (self, json) {
        case (.object(let schema), _):
            return schema.camelCased(json)
        case (.tagged(let tagged), .object(let members)):
            guard let tag = members[tagged.discriminator]?.stringValue, let variant = tagged.variants[tag] else { return json }
            return (tagged.common + variant).camelCased(json)
        case (.list(let element), .array(let elements)):
            return .array(elements.map(element.camelCased))
        case (.map(let valueType), .object(let members)):
            return .object(members.mapValues(valueType.camelCased))
        default:
            return json
        }
    }
}
