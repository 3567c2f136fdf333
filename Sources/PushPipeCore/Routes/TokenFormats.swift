/// The token formats a registry knows, by name: the core's `opaque` and every transport's.
public struct TokenFormats: Sendable {
    private var byName: [String: any TokenFormat] = [:]

    public init(_ formats: [any TokenFormat] = []) {
        for format in [OpaqueTokenFormat()] + formats where byName[format.name] == nil { byName[format.name] = format }
    }

    public subscript(name: String) -> (any TokenFormat)? { byName[name] }

    /// The format a route's `token_format` names; a configuration error when no transport
    /// describes it (a route made in code, which no schema checked).
    func configured(_ name: String) throws -> any TokenFormat {
        guard let format = byName[name] else {
            throw ConfigurationValueError(
                keyPath: "token_format",
                "no transport describes '\(name)'",
                expected: all.map(\.name).joined(separator: ", ")
            )
        }
        return format
    }

    /// Sorted by name, for schemas and docs.
    public var all: [any TokenFormat] { byName.values.sorted { $0.name < $1.name } }

    /// A `token_format` key taking one of `formats`, each described by its summary.
    static func schemaKey(_ formats: [any TokenFormat], default name: String, _ purpose: String) -> SchemaKey {
        let names = formats.map(\.name)
        return SchemaKey(
            "token_format",
            .oneOf(names),
            default: .string(names.contains(name) ? name : names.first ?? name),
            purpose + " " + formats.map { "`\($0.name)`: \($0.summary)" }.joined(separator: " ")
        )
    }
}
