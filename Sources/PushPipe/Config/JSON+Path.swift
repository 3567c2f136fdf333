/// Dotted paths into JSON values: `user`, `games[0].last_move`, `body.data.type`.
///
/// Pipelines name event fields this way in YAML, so the syntax stays deliberately small:
/// object keys separated by dots and array indexes in brackets.
extension JSON {
    public func value(at path: String) -> JSON? {
        guard !path.isEmpty else { return self }
        var current: JSON = self
        for component in JSON.components(of: path) {
            switch component {
            case .key(let key):
                guard let next = current[key] else { return nil }
                current = next
            case .index(let index):
                guard case .array(let elements) = current, elements.indices.contains(index) else { return nil }
                current = elements[index]
            }
        }
        return current
    }

    enum PathComponent: Equatable {
        case key(String)
        case index(Int)
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
                    components.append(Int(inner).map(PathComponent.index) ?? .key(String(inner)))
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
