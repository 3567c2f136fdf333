import Foundation
import Yams

/// Reads plugin manifests and pipeline files, validates them completely and constructs
/// their stages. Nothing is started: `pushpipe validate` and a reload use exactly this.
public struct ConfigLoader: Sendable {
    public var builtins: [any Registrable]
    public var interpolation: EnvironmentInterpolation
    /// What runs plugin stages; nil in a program that only reads configuration.
    public var pluginHost: (any PluginHost)?
    /// Handed to every stage: where requests to URLs users chose may go.
    public var egress: EgressPolicy

    public init(
        builtins: [any Registrable],
        interpolation: EnvironmentInterpolation,
        pluginHost: (any PluginHost)? = nil,
        egress: EgressPolicy = .standard
    ) {
        self.builtins = builtins
        self.interpolation = interpolation
        self.pluginHost = pluginHost
        self.egress = egress
    }

    public struct Result: Sendable {
        public var pipelines: [PipelineDefinition] = []
        public var plugins: [PluginManifest] = []
        public var registry: StageRegistry
        public var diagnostics: [Diagnostic] = []
        /// Files that had no error (for `pushpipe validate`'s `ok <file>` lines).
        public var validFiles: [String] = []
    }

    /// Pipeline files: the given paths (files or folders of `*.yaml`), `_test.yaml` files excluded.
    public static func pipelineFiles(in paths: [String]) -> [String] {
        files(in: paths) { ($0.hasSuffix(".yaml") || $0.hasSuffix(".yml")) && !$0.hasSuffix("_test.yaml") && !$0.hasPrefix(".") }
    }

    /// The given paths, with each folder replaced by its matching files in name order; paths
    /// that name files (or nothing) stay as they are, so reading them reports the problem.
    package static func files(in paths: [String], matching include: (String) -> Bool) -> [String] {
        paths.flatMap { path -> [String] in
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else { return [path] }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            return names.filter(include).sorted().map { (path as NSString).appendingPathComponent($0) }
        }
    }

    public func load(pipelineFiles: [String], pluginsDirectory: String?) async -> Result {
        var result = Result(registry: StageRegistry(builtins))
        if let pluginsDirectory {
            let (plugins, diagnostics) = PluginManifest.loadAll(in: pluginsDirectory, interpolation: interpolation)
            result.diagnostics += diagnostics
            for plugin in plugins {
                if let existing = result.registry.register(plugin.descriptor(servedBy: pluginHost)) {
                    let clash = existing.origin == .builtin ? "a built-in" : "another plugin"
                    result.diagnostics.append(
                        Diagnostic(
                            .invalidPlugin,
                            at: plugin.location,
                            keyPath: "name",
                            "plugin name '\(plugin.name)' is already \(clash) \(plugin.kind.rawValue) type"
                        )
                    )
                } else {
                    result.plugins.append(plugin)
                }
            }
        }
        for file in pipelineFiles {
            let (definition, diagnostics) = await loadPipeline(file: file, registry: result.registry, plugins: result.plugins)
            result.diagnostics += diagnostics
            if let definition { result.pipelines.append(definition) }
            if !diagnostics.hasErrors { result.validFiles.append(file) }
        }
        result.diagnostics += Self.crossFileDiagnostics(result.pipelines)
        let failing = Set(result.diagnostics.errors.map(\.location.file))
        result.pipelines.removeAll { failing.contains($0.file) }
        result.validFiles.removeAll { failing.contains($0) }
        return result
    }

    /// Names and routes must be unique across all pipelines served by one daemon, and state
    /// they share (`SharedState`) declared alike.
    static func crossFileDiagnostics(_ pipelines: [PipelineDefinition]) -> [Diagnostic] {
        var diagnostics: [Diagnostic] = []
        var names: [String: PipelineDefinition] = [:]
        for pipeline in pipelines {
            if let other = names[pipeline.name] {
                diagnostics.append(
                    Diagnostic(
                        .duplicatePipeline,
                        at: pipeline.location,
                        keyPath: "pipeline",
                        "pipeline name '\(pipeline.name)' is also used by \(other.file)"
                    )
                )
            }
            names[pipeline.name] = pipeline
        }
        let routes = pipelines.flatMap { pipeline in pipeline.routes.map { (pipeline, $0) } }
        for (index, (pipeline, declared)) in routes.enumerated() {
            for (otherPipeline, other) in routes[..<index] where declared.route.collides(with: other.route) {
                let whose = otherPipeline.name == pipeline.name ? "this pipeline" : "pipeline '\(otherPipeline.name)'"
                diagnostics.append(
                    Diagnostic(
                        .duplicateRoute,
                        at: declared.location,
                        keyPath: declared.keyPath,
                        "route \(declared.route.method) \(declared.route.path) is already served by \(whose) at \(other.location)"
                    )
                )
            }
        }
        var shared: [String: (PipelineDefinition, PipelineDefinition.DeclaredSharedState)] = [:]
        for pipeline in pipelines {
            for declared in pipeline.sharedStates {
                guard let (otherPipeline, other) = shared[declared.state.name] else {
                    shared[declared.state.name] = (pipeline, declared)
                    continue
                }
                guard other.state.terms != declared.state.terms else { continue }
                let whose = otherPipeline.name == pipeline.name ? "this pipeline" : "pipeline '\(otherPipeline.name)'"
                diagnostics.append(
                    Diagnostic(
                        .conflictingSharedState,
                        at: declared.location,
                        keyPath: declared.keyPath,
                        "'\(declared.state.name)' is shared with \(whose) at \(other.location), which says \(other.state.terms): "
                            + "one would prune what the other counts",
                        expected: other.state.terms
                    )
                )
            }
        }
        return diagnostics
    }

    public func loadPipeline(file: String, registry: StageRegistry, plugins: [PluginManifest]) async -> (PipelineDefinition?, [Diagnostic]) {
        let start = SourceLocation(file: file, line: 1, column: 1)
        guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
            return (nil, [Diagnostic(.unreadableFile, at: start, keyPath: "", "cannot read file")])
        }
        let root: Node
        switch Self.compose(text, file: file) {
        case .failure(let diagnostic): return (nil, [diagnostic])
        case .success(let node): root = node
        }
        var validator = SchemaValidator(file: file, interpolation: interpolation)
        guard let json = validator.validate(root, as: .object(PipelineSchema.schema(registry: registry)), at: "") else {
            return (nil, validator.diagnostics)
        }
        var builder = PipelineBuilder(file: file, root: root, json: json, registry: registry, validator: validator, egress: egress)
        let definition = await builder.build(plugins: plugins)
        return (builder.diagnostics.hasErrors ? nil : definition, builder.diagnostics)
    }

    package static func compose(_ text: String, file: String) -> Swift.Result<Node, Diagnostic> {
        do {
            guard let node = try Yams.compose(yaml: text) else {
                return .failure(Diagnostic(.yamlSyntax, at: SourceLocation(file: file, line: 1, column: 1), keyPath: "", "the file is empty"))
            }
            return .success(node)
        } catch let error as YamlError {
            return .failure(Self.diagnostic(for: error, file: file))
        } catch {
            return .failure(Diagnostic(.yamlSyntax, at: SourceLocation(file: file, line: 1, column: 1), keyPath: "", "\(error)"))
        }
    }

    static func diagnostic(for error: YamlError, file: String) -> Diagnostic {
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            var detail = context.map { "\(problem) \($0.text)" } ?? problem
            if let context, context.mark.line != mark.line { detail += " (which started at \(context.mark.line):\(context.mark.column))" }
            return Diagnostic(.yamlSyntax, at: SourceLocation(file: file, line: mark.line, column: mark.column), keyPath: "", detail)
        case .duplicatedKeysInMapping(let duplicates, let context):
            return Diagnostic(
                .duplicateKey,
                at: SourceLocation(file: file, line: context.mark.line, column: context.mark.column),
                keyPath: "",
                "duplicate keys: \(duplicates.joined(separator: ", "))"
            )
        default:
            return Diagnostic(.yamlSyntax, at: SourceLocation(file: file, line: 1, column: 1), keyPath: "", "\(error)")
        }
    }
}

extension Node {
    /// The node at a key path such as `routes[1].auth`, for pointing diagnostics at it.
    func descendant(at path: String) -> Node? {
        var current = self
        for component in JSON.components(of: path) {
            switch (component, current) {
            case (.key(let key), .mapping(let mapping)):
                guard let next = mapping.first(where: { $0.key.string == key })?.value else { return nil }
                current = next
            case (.index(let index), .sequence(let sequence)):
                guard sequence.indices.contains(index) else { return nil }
                current = sequence[index]
            default:
                return nil
            }
        }
        return current
    }
}
