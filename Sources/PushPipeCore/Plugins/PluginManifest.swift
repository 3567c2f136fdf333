import Foundation
import Yams

/// `plugins.d/<name>/plugin.yaml`: a stage type served by a long-lived child process.
public struct PluginManifest: Sendable {
    public var name: String
    public var kind: StageKind
    public var summary: String
    /// argv, no shell: the first element is a path relative to the plugin folder or a program on PATH.
    public var command: [String]
    public var directory: String
    public var timeout: Duration
    public var schema: Schema
    public var location: SourceLocation
    public var fingerprint: String

    static let manifestSchema = Schema([
        .required("name", .string, "Stage type name pipelines use."),
        .required("kind", .oneOf(StageKind.allCases.map(\.rawValue)), "Stage kind."),
        SchemaKey("description", .string, default: "", "One line shown by `pushpipe stages`."),
        .required("command", .list(.string), "argv of the plugin process, run in the plugin folder; no shell."),
        SchemaKey("timeout", .duration, default: 5, "How long one request may take before the event counts as failed."),
        SchemaKey(
            "config",
            .map(
                .object(
                    Schema([
                        .required("type", .oneOf(["string", "integer", "number", "boolean", "duration", "list", "map", "any"]), "Value type."),
                        SchemaKey("required", .boolean, default: false, "Whether pipelines must set it."),
                        SchemaKey("default", .any, "Value when not set."),
                        SchemaKey("doc", .string, default: "", "One line of documentation."),
                    ])
                )
            ),
            default: [:],
            "Configuration keys the stage accepts, validated like a built-in's."
        ),
    ])

    /// Every `*/plugin.yaml` under `directory`; a missing directory has no plugins.
    public static func loadAll(in directory: String, interpolation: EnvironmentInterpolation) -> ([PluginManifest], [Diagnostic]) {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        var manifests: [PluginManifest] = []
        var diagnostics: [Diagnostic] = []
        for name in names where !name.hasPrefix(".") {
            let file = "\(directory)/\(name)/plugin.yaml"
            guard FileManager.default.fileExists(atPath: file) else { continue }
            switch load(file: file, interpolation: interpolation) {
            case .success(let manifest): manifests.append(manifest)
            case .failure(let error): diagnostics += error.diagnostics
            }
        }
        return (manifests, diagnostics)
    }

    public static func load(file: String, interpolation: EnvironmentInterpolation) -> Result<PluginManifest, ConfigurationError> {
        let start = SourceLocation(file: file, line: 1, column: 1)
        guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
            return .failure(ConfigurationError([Diagnostic(.unreadableFile, at: start, keyPath: "", "cannot read plugin manifest")]))
        }
        let root: Node
        switch ConfigLoader.compose(text, file: file) {
        case .failure(let diagnostic): return .failure(ConfigurationError([diagnostic]))
        case .success(let node): root = node
        }
        var validator = SchemaValidator(file: file, interpolation: interpolation)
        guard let json = validator.validate(root, as: .object(manifestSchema), at: "") else {
            return .failure(ConfigurationError(validator.diagnostics))
        }
        let command = (json["command"]?.arrayValue ?? []).compactMap(\.stringValue)
        guard !command.isEmpty, !command[0].isEmpty else {
            return .failure(
                ConfigurationError([
                    Diagnostic(
                        .invalidPlugin,
                        at: start,
                        keyPath: "command",
                        "command must name a program",
                        expected: "an argv list such as [python3, plugin.py]"
                    )
                ])
            )
        }
        var keys: [SchemaKey] = []
        for (key, spec) in (json["config"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
            let type: ValueType =
                switch spec["type"]?.stringValue {
                case "integer": .integer
                case "number": .number
                case "boolean": .boolean
                case "duration": .duration
                case "list": .list(.any)
                case "map": .map(.any)
                case "any": .any
                default: .string
                }
            var schemaKey = SchemaKey(key, type, default: spec["default"], spec["doc"]?.stringValue ?? "")
            schemaKey.required = spec["required"]?.boolValue ?? false
            keys.append(schemaKey)
        }
        return .success(
            PluginManifest(
                name: json["name"]?.stringValue ?? "",
                kind: StageKind(rawValue: json["kind"]?.stringValue ?? "") ?? .filter,
                summary: json["description"]?.stringValue ?? "",
                command: command,
                directory: (file as NSString).deletingLastPathComponent,
                timeout: .seconds(json["timeout"]?.doubleValue ?? 5),
                schema: Schema(keys),
                location: start,
                fingerprint: json.compactText
            )
        )
    }

    /// This plugin's stage type, its stages made by `host` (nil: a program that runs no
    /// plugin, such as `pushpipe validate` on its own, still checks their configuration).
    public func descriptor(servedBy host: (any PluginHost)?) -> StageDescriptor {
        let manifest = self
        return StageDescriptor(kind: kind, type: name, summary: summary, schema: schema, origin: .plugin(directory: directory)) { json, context in
            guard let host else { throw PluginHostMissing(plugin: manifest.name) }
            var configuration = json.objectValue ?? [:]
            configuration["type"] = nil
            return try host.makeStage(manifest, configuration: .object(configuration), context: context)
        }
    }
}
