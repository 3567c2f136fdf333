import PushPipeCore

/// A payload of any shape from a template, for transports that take plain JSON (stdout,
/// plugins, webhooks). Platform renderers build on the same templates.
struct JSONTemplateRenderer: Renderer {
    static let summary = "Renders a JSON payload from a template tree, one per recipient token."

    struct Configuration: StageConfiguration {
        var vars: [String: JSON]
        var tokenKind: String
        var payload: JSON
        var options: [String: JSON]
        var history: JSON?

        static let schema = Schema([
            SchemaKey("token_kind", .string, default: "device", "Which registered tokens receive the payload."),
            .required("payload", .any, "Template tree: strings with `{{...}}` are Mustache, `{$from: path}` copies a typed value."),
            SchemaKey("options", .map(.any), default: [:], "Transport options (headers), templated the same way."),
            SchemaKey("history", .any, "What the history route shows; the payload when omitted."),
            SchemaKey("vars", .map(.any), default: [:], "Values computed from the event, used as `{{vars.name}}` (templates, `$from`, `$switch`)."),
        ])
    }

    let vars: [String: JSONTemplate]
    let tokenKind: String
    let payload: JSONTemplate
    let options: JSONTemplate
    let history: JSONTemplate?

    init(configuration: Configuration) throws {
        vars = try configuration.vars.compile(keyPath: "vars")
        tokenKind = configuration.tokenKind
        payload = try JSONTemplate(compiling: configuration.payload, keyPath: "payload")
        options = try JSONTemplate(compiling: .object(configuration.options), keyPath: "options")
        history = try configuration.history.map { try JSONTemplate(compiling: $0, keyPath: "history") }
    }

    func render(_ event: Event, context: StageContext) async throws -> [RenderedNotification] {
        let templateContext = TemplateContext(event: event, vars: vars)
        let rendered = payload.render(templateContext) ?? .null
        let renderedOptions = options.render(templateContext)?.objectValue ?? [:]
        let record = history?.render(templateContext)
        return RenderedNotification.each(
            of: try await context.tokens(for: event, kind: tokenKind),
            payload: rendered,
            options: renderedOptions,
            historyRecord: record
        )
    }
}
