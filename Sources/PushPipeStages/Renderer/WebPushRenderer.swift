import PushPipeCore

/// The JSON a service worker's `push` handler reads (`event.data.json()`), and the delivery
/// options the `webpush` transport turns into headers. The page decides what to show; the
/// shape here is what `docs/webpush.md`'s service worker expects: `title`, `body`, `icon`,
/// `badge`, `tag`, and `data` (with `url`, opened on click).
struct WebPushRenderer: Renderer {
    static let summary = "Renders a Web Push message for a service worker (title, body, icon, url, data; TTL, urgency, topic)."

    struct Configuration: StageConfiguration {
        var tokenKind: String
        var title: String
        var body: String?
        var icon: String?
        var badge: String?
        var tag: String?
        var url: String?
        var data: [String: JSON]
        var ttl: JSON?
        var urgency: String?
        var topic: String?
        var history: JSON?
        var vars: [String: JSON]

        static let schema = Schema([
            SchemaKey("token_kind", .string, default: "webpush", "Which registered subscriptions receive the message."),
            .required("title", .string, "Title template."),
            SchemaKey("body", .string, "Body template."),
            SchemaKey("icon", .string, "Icon URL template."),
            SchemaKey("badge", .string, "Badge URL template (Android's status bar)."),
            SchemaKey("tag", .string, "Tag template: a notification with the same tag replaces the shown one."),
            SchemaKey("url", .string, "URL template the service worker opens on click (`data.url`)."),
            SchemaKey("data", .map(.any), default: [:], "More values for the service worker (`data`), templated."),
            SchemaKey(
                "ttl",
                .any,
                "How long the push service keeps it (`TTL`: seconds, `1h`, or a template of either); the transport's `ttl` otherwise."
            ),
            SchemaKey("urgency", .string, "`very-low`, `low`, `normal` or `high` (template); the transport's otherwise."),
            SchemaKey("topic", .string, "Topic template (at most 32 base64url characters): replaces an undelivered message with the same topic."),
            SchemaKey("history", .any, "What the history route shows; the message by default."),
            SchemaKey("vars", .map(.any), default: [:], "Values computed from the event, used as `{{vars.name}}`."),
        ])
    }

    let configuration: Configuration
    let message: JSONTemplate
    let options: JSONTemplate
    let history: JSONTemplate?
    let vars: [String: JSONTemplate]

    init(configuration: Configuration) throws {
        self.configuration = configuration
        var message: [String: JSON] = ["title": .string(configuration.title)]
        message["body"] = configuration.body.map(JSON.string)
        message["icon"] = configuration.icon.map(JSON.string)
        message["badge"] = configuration.badge.map(JSON.string)
        message["tag"] = configuration.tag.map(JSON.string)
        var data = configuration.data
        data["url"] = configuration.url.map(JSON.string)
        if !data.isEmpty { message["data"] = .object(data) }
        self.message = try JSONTemplate(compiling: .object(message), keyPath: "")
        var options: [String: JSON] = [:]
        options["ttl"] = configuration.ttl
        options["urgency"] = configuration.urgency.map(JSON.string)
        options["topic"] = configuration.topic.map(JSON.string)
        self.options = try JSONTemplate(compiling: .object(options), keyPath: "")
        history = try configuration.history.map { try JSONTemplate(compiling: $0, keyPath: "history") }
        vars = try configuration.vars.compile(keyPath: "vars")
    }

    func render(_ event: Event, context: StageContext) async throws -> [RenderedNotification] {
        let templates = TemplateContext(event: event, vars: vars)
        let payload = message.render(templates) ?? [:]
        var renderedOptions = options.render(templates)?.objectValue ?? [:]
        // A templated TTL renders as text: seconds or a duration (`1h`); empty (the event has
        // none) is the transport's; any other text stays, for the transport to refuse.
        if case .string(let text)? = renderedOptions["ttl"] {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            renderedOptions["ttl"] = trimmed.isEmpty ? nil : SchemaValidator.parseDuration(trimmed).map(JSON.double) ?? .string(text)
        }
        let record = history.map { $0.render(templates) ?? .null } ?? payload
        return RenderedNotification.each(
            of: try await context.tokens(for: event, kind: configuration.tokenKind),
            payload: payload,
            options: renderedOptions,
            historyRecord: record
        )
    }
}
