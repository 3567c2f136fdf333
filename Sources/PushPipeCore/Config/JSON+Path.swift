/// Dotted paths into JSON values: `user`, `games[0].last_move`, `games[*].game_id`
/// (one value per element), `games.@count` (the number of elements).
///
/// Pipelines name event fields this way in YAML, so the syntax stays deliberately small.
extension JSON {
    public func value(at path: String) -> JSON? {
        guard !path.isEmpty else { return self }
        return value(at: JSON.components(of: path)[...])
    }

    /// A path parsed once (templates look the same paths up for every event).
    public func value(at path: JSONPath) -> JSON? {
        value(at: path.components[...])
    }

    public func value(at components: ArraySlice<PathComponent>) -> JSON? {
        guard let component = components.first else { return self }
        let rest = components.dropFirst()
        switch (component, self) {
        case (.key("@count"), .array(let elements)):
            return JSON.int(Int64(elements.count)).value(at: rest)
        case (.key(let key), .object(let members)):
            return members[key]?.value(at: rest)
        case (.index(let index), .array(let elements)):
            return elements.indices.contains(index) ? elements[index].value(at: rest) : nil
        case (.all, .array(let elements)):
            return .array(elements.compactMap { $0.value(at: rest) })
        default:
            return nil
        }
    }

    /// A copy with the value at a plain dotted path (object keys only) replaced.
    public func replacing(at path: String, with value: JSON) -> JSON {
        let keys = path.split(separator: ".").map(String.init)
        guard let first = keys.first else { return value }
        var members = objectValue ?? [:]
        members[first] =
            keys.count == 1 ? value : (members[first] ?? .object([:])).replacing(at: keys.dropFirst().joined(separator: "."), with: value)
        return .object(members)
    }

    public enum PathComponent: Equatable, Sendable {
        case key(String)
        case index(Int)
        case all
    }

    static func components(of path: String) -> [PathComponent] {
        var components: [PathComponent] = []
        for part in path.split(separator: ".", omittingEmptySubsequences: true) {
            var remainder = Substring(part)
            if let bracket = remainder.firstIndex(of: "[") {
                let key = remainder[..<bracket]
                if !key.isEmpty { components.append(.key(String(key))) }
                remainder = remainder[bracket...]
                while remainder.first == "[", let close = remainder.firstIndex(of: "]") {
                    let inner = remainder[remainder.index(after: remainder.startIndex)..<close]
                    components.append(inner == "*" ? .all : Int(inner).map(PathComponent.index) ?? .key(String(inner)))
                    remainder = remainder[remainder.index(after: close)...]
                }
            } else {
                components.append(.key(String(part)))
            }
        }
        return components
    }

    /// Plain Foundation values for template engines (`[String: Any]`, `[Any]`, ...).
    public var foundationValue: Any {
        switch self {
        case .null: return Optional<Any>.none as Any
        case .bool(let value): return value
        case .int(let value): return Int(value)
        case .double(let value): return value
        case .string(let value): return value
        case .array(let elements): return elements.map(\.foundationValue)
        case .object(let members): return members.mapValues(\.foundationValue)
        }
    }
}

/// A dotted path, parsed.
public struct JSONPath: Sendable, Equatable {
    public let components: [JSON.PathComponent]

    public init(_ text: String) {
        components = JSON.components(of: text)
    }

    /// The path without its first component.
    public var rest: ArraySlice<JSON.PathComponent> { components.dropFirst() }
}
