import Foundation
import Yams

/// Constructs a validated pipeline's stages and routes, turning construction errors into
/// diagnostics at the offending key.
struct PipelineBuilder {
    let file: String
    let root: Node
    let json: JSON
    let registry: StageRegistry
    var validator: SchemaValidator
    let egress: EgressPolicy
    var diagnostics: [Diagnostic] { validator.diagnostics }

    init(file: String, root: Node, json: JSON, registry: StageRegistry, validator: SchemaValidator, egress: EgressPolicy = .standard) {
        self.file = file
        self.root = root
        self.json = json
        self.registry = registry
        self.validator = validator
        self.egress = egress
    }

    mutating func build(plugins: [PluginManifest]) async -> PipelineDefinition? {
        let name = json["pipeline"]?.stringValue ?? ""
        if name.isEmpty || !name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) {
            report(.invalidValue, at: "pipeline", "'\(name)' is not a valid pipeline name", expected: "letters, digits, '-' and '_'")
        }
        let sourceKeys = sourceKeys()
        let sources = (json["sources"]?.arrayValue ?? []).enumerated().compactMap { index, stage in
            build(stage, id: "sources[\(index)]", key: sourceKeys[index], kind: .source, pipeline: name) {
                if case .source(let s) = $0 { s } else { nil }
            }
        }
        if sources.isEmpty && json["sources"]?.arrayValue?.isEmpty == true {
            report(.invalidValue, at: "sources", "a pipeline needs at least one source", expected: "a list with one or more sources")
        }
        let filters = (json["filters"]?.arrayValue ?? []).enumerated().compactMap { index, stage in
            build(stage, id: "filters[\(index)]", kind: .filter, pipeline: name) { if case .filter(let s) = $0 { s } else { nil } }
        }
        let renderer = json["renderer"].flatMap {
            build($0, id: "renderer", kind: .renderer, pipeline: name) { if case .renderer(let s) = $0 { s } else { nil } }
        }
        let transport = json["transport"].flatMap {
            build($0, id: "transport", kind: .transport, pipeline: name) { if case .transport(let s) = $0 { s } else { nil } }
        }

        var routes: [PipelineDefinition.DeclaredRoute] = []
        var routeServices: [PipelineDefinition.Stage<any LongRunningStage>] = []
        for (index, routeJSON) in (json["routes"]?.arrayValue ?? []).enumerated() {
            let keyPath = "routes[\(index)]"
            guard let served = await buildRoute(routeJSON, keyPath: keyPath, pipeline: name) else { continue }
            routes += served.routes.map { .init(route: $0, location: location(of: keyPath), keyPath: keyPath) }
            if let service = served.service {
                routeServices.append(.init(id: keyPath, type: routeJSON["action"]?.stringValue ?? "", stage: service))
            }
        }
        for source in sources {
            for route in source.stage.routes {
                routes.append(.init(route: route, location: location(of: source.id), keyPath: source.id))
            }
        }
        let delivery = (try? DeliveryPolicy.schema.decode(DeliveryPolicy.self, from: json["delivery"] ?? DeliveryPolicy.defaults.json)) ?? .defaults
        do { _ = try delivery.sendRate() } catch let error as ConfigurationValueError {
            report(.invalidValue, at: "delivery.max_rate", error.message, expected: error.expected)
        } catch {}
        let retention =
            (try? RetentionPolicy.schema.decode(RetentionPolicy.self, from: json["retention"] ?? RetentionPolicy.defaults.json)) ?? .defaults
        let idempotency =
            (try? IdempotencyPolicy.schema.decode(IdempotencyPolicy.self, from: json["idempotency"] ?? IdempotencyPolicy.defaults.json))
            ?? .defaults
        var webhooks: [WebhookTarget] = []
        for (index, webhookJSON) in (json["webhooks"]?.arrayValue ?? []).enumerated() {
            guard let webhook = try? WebhookTarget.schema.decode(WebhookTarget.self, from: webhookJSON) else { continue }
            if let problem = webhook.problem() {
                report(.invalidValue, at: "webhooks[\(index)].\(problem.key)", problem.message, expected: problem.expected)
            }
            webhooks.append(webhook)
        }
        guard let renderer, let transport, !diagnostics.hasErrors else { return nil }
        let usedPlugins = plugins.filter { plugin in
            (sources.map(\.type) + filters.map(\.type) + [renderer.type, transport.type]).contains(plugin.name)
        }
        let fingerprint = json.compactText + usedPlugins.map(\.fingerprint).joined()
        var definition = PipelineDefinition(
            name: name,
            file: file,
            description: json["description"]?.stringValue,
            fingerprint: fingerprint,
            sources: sources,
            filters: filters,
            renderer: renderer,
            transport: transport,
            routes: routes,
            delivery: delivery,
            location: SourceLocation(file: file, line: 1, column: 1)
        )
        definition.sharedStates = filters.compactMap { filter in
            guard let shared = (filter.stage as? any SharingState)?.sharedState else { return nil }
            let keyPath = "\(filter.id).\(shared.keyPath)"
            return .init(state: shared, location: location(of: keyPath), keyPath: keyPath)
        }
        definition.retention = retention
        definition.idempotency = idempotency
        definition.webhooks = webhooks
        definition.routeServices = routeServices
        return definition
    }

    mutating func build<S>(
        _ stageJSON: JSON,
        id: String,
        key: String? = nil,
        kind: StageKind,
        pipeline: String,
        extract: (AnyStage) -> S?
    )
        -> PipelineDefinition.Stage<S>?
    {
        let type = stageJSON["type"]?.stringValue ?? ""
        guard let descriptor = registry.descriptor(kind: kind, type: type) else { return nil }
        let context = StageBuildContext(pipeline: pipeline, stage: id, key: key, egress: egress)
        do {
            guard let stage = extract(try descriptor.make(configuration: stageJSON, context: context)) else { return nil }
            return .init(id: id, type: type, stage: stage, key: key)
        } catch let error as ConfigurationValueError {
            let path = error.keyPath.isEmpty ? id : "\(id).\(error.keyPath)"
            report(.invalidValue, at: path, error.message, expected: error.expected)
        } catch let error as ConfigurationError {
            validator.diagnostics.append(contentsOf: error.diagnostics)
        } catch {
            report(.invalidValue, at: id, "cannot build \(kind.rawValue) '\(type)': \(error)")
        }
        return nil
    }

    /// Each source's key: its `key`, or its type. Two sources with one key would share their
    /// queued events and schedules, so that is an error naming both.
    mutating func sourceKeys() -> [Int: String] {
        var keys: [Int: String] = [:]
        var firstWithKey: [String: Int] = [:]
        for (index, source) in (json["sources"]?.arrayValue ?? []).enumerated() {
            let explicit = source["key"]?.stringValue
            guard let key = explicit ?? source["type"]?.stringValue else { continue }
            let keyPath = explicit == nil ? "sources[\(index)].type" : "sources[\(index)].key"
            guard !key.isEmpty, key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
                report(.invalidValue, at: keyPath, "'\(key)' is not a source key", expected: "letters, digits, '-', '_' and '.'")
                continue
            }
            if let first = firstWithKey[key] {
                report(
                    .invalidValue,
                    at: keyPath,
                    "sources[\(first)] has the key '\(key)' too: their queued events would mix",
                    expected: "a distinct `key:` on each source of one type"
                )
                continue
            }
            firstWithKey[key] = index
            keys[index] = key
        }
        return keys
    }

    mutating func buildRoute(_ routeJSON: JSON, keyPath: String, pipeline: String) async -> ServedRoutes? {
        let actionName = routeJSON["action"]?.stringValue ?? ""
        guard let action = registry.routeAction(named: actionName) else { return nil }
        let path = routeJSON["path"]?.stringValue ?? ""
        guard path.hasPrefix("/"), !path.contains("?"), !path.contains("//") else {
            report(.invalidValue, at: "\(keyPath).path", "'\(path)' is not a route path", expected: "a path starting with '/', e.g. /register")
            return nil
        }
        if let secret = routeJSON["auth"]?["secret"]?.stringValue, secret.utf8.count < RouteAuthentication.minimumSecretBytes,
            !(secret.isEmpty && validator.interpolation.allowsUndefined)
        {
            report(
                .invalidValue,
                at: "\(keyPath).auth.secret",
                "the JWT secret is \(secret.utf8.count) bytes long",
                expected: "at least \(RouteAuthentication.minimumSecretBytes) bytes (HS256)"
            )
        }
        if routeJSON["auth"]?["type"]?.stringValue == "identity", routeJSON["auth"]?["url"]?.stringValue?.isEmpty != false,
            !validator.interpolation.allowsUndefined
        {
            report(.invalidValue, at: "\(keyPath).auth.url", "the identity URL is empty", expected: "https://online-go.com/api/v1/me")
        }
        do {
            return try action.routes(routeJSON, context: StageBuildContext(pipeline: pipeline, stage: keyPath, egress: egress))
        } catch let error as ConfigurationValueError {
            report(.invalidValue, at: "\(keyPath).\(error.keyPath)", error.message, expected: error.expected)
        } catch {
            report(.invalidValue, at: keyPath, "\(error)")
        }
        return nil
    }

    func location(of keyPath: String) -> SourceLocation {
        var path = keyPath
        while true {
            if let node = root.descendant(at: path) { return validator.location(of: node) }
            guard let cut = path.lastIndex(where: { $0 == "." || $0 == "[" }) else { return validator.location(of: root) }
            path = String(path[..<cut])
        }
    }

    mutating func report(_ code: Diagnostic.Code, at keyPath: String, _ message: String, expected: String? = nil) {
        validator.diagnostics.append(Diagnostic(code, at: location(of: keyPath), keyPath: keyPath, message, expected: expected))
    }
}
