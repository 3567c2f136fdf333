import PushPipeCore

/// An APNs alert (or background) notification: `aps` from templates, custom top-level keys
/// that keep their JSON types, and the delivery options the `apns` transport turns into headers.
struct APNsAlertRenderer: Renderer {
    static let summary = "Renders an APNs alert payload (aps + custom keys) per device token."

    struct Configuration: StageConfiguration {
        var vars: [String: JSON]
        var tokenKind: String
        var title: String?
        var subtitle: String?
        var body: String?
        var sound: String?
        var badge: JSON?
        var threadId: String?
        var category: String?
        var contentAvailable: Bool
        var mutableContent: Bool
        var pushType: String
        var priority: Int?
        var expiration: JSON?
        var collapseId: String?
        var custom: [String: JSON]
        var history: JSON?

        static let schema = Schema([
            SchemaKey("token_kind", .string, default: "device", "Which registered tokens receive the notification."),
            SchemaKey("title", .string, "Alert title template."),
            SchemaKey("subtitle", .string, "Alert subtitle template."),
            SchemaKey("body", .string, "Alert body template; `{{truncate100(text)}}` cuts at 100 characters plus `...`."),
            SchemaKey("sound", .string, "Sound name, e.g. `default`."),
            SchemaKey("badge", .any, "Badge number (integer), or `{$from: path}`."),
            SchemaKey("thread_id", .string, "Groups notifications (template)."),
            SchemaKey("category", .string, "Notification category for actions (template)."),
            SchemaKey("content_available", .boolean, default: false, "Wake the app (`content-available: 1`)."),
            SchemaKey("mutable_content", .boolean, default: false, "Let a service extension change it."),
            SchemaKey("push_type", .oneOf(["alert", "background"]), default: "alert", "APNs push type."),
            SchemaKey(
                "priority",
                .integer,
                in: [10, 5, 1],
                "10 immediately, 5 power-aware, 1 never wake; 10 when omitted, 5 for background (which must be 5)."
            ),
            SchemaKey("expiration", .any, "UNIX seconds (or `{$from: path}`) after which APNs stops trying; 0 tries once; none when omitted."),
            SchemaKey("collapse_id", .string, "Replaces an earlier notification with the same id (template, at most 64 bytes)."),
            SchemaKey("custom", .map(.any), default: [:], "Top-level keys next to `aps`, templated, JSON types kept."),
            SchemaKey("history", .any, "What the history route shows; the payload when omitted."),
            SchemaKey("vars", .map(.any), default: [:], "Values computed from the event, used as `{{vars.name}}` (templates, `$from`, `$switch`)."),
        ])
    }

    let configuration: Configuration
    let vars: [String: JSONTemplate]
    let aps: JSONTemplate
    let custom: JSONTemplate
    let options: JSONTemplate
    let history: JSONTemplate?

    init(configuration: Configuration) throws {
        self.configuration = configuration
        vars = try configuration.vars.compile(keyPath: "vars")
        if configuration.pushType == "alert" && configuration.title == nil && configuration.body == nil {
            throw ConfigurationValueError(keyPath: "body", "an alert needs a title or a body", expected: "`title` and/or `body`")
        }
        if configuration.custom["aps"] != nil {
            throw ConfigurationValueError(
                keyPath: "custom.aps",
                "`aps` is built from the renderer's own keys",
                expected: "title, body, sound, badge, ..."
            )
        }
        var alert: [String: JSON] = [:]
        alert["title"] = configuration.title.map(JSON.string)
        alert["subtitle"] = configuration.subtitle.map(JSON.string)
        alert["body"] = configuration.body.map(JSON.string)
        var aps: [String: JSON] = [:]
        if !alert.isEmpty { aps["alert"] = .object(alert) }
        aps["sound"] = configuration.sound.map(JSON.string)
        aps["badge"] = configuration.badge
        aps["thread-id"] = configuration.threadId.map(JSON.string)
        aps["category"] = configuration.category.map(JSON.string)
        if configuration.contentAvailable || configuration.pushType == "background" { aps["content-available"] = 1 }
        if configuration.mutableContent { aps["mutable-content"] = 1 }
        self.aps = try JSONTemplate(compiling: .object(aps), keyPath: "")
        custom = try JSONTemplate(compiling: .object(configuration.custom), keyPath: "custom")
        var options: [String: JSON] = ["push_type": .string(configuration.pushType)]
        options["priority"] = configuration.priority.map { .int(Int64($0)) }
        options["expiration"] = configuration.expiration
        options["collapse_id"] = configuration.collapseId.map(JSON.string)
        self.options = try JSONTemplate(compiling: .object(options), keyPath: "")
        history = try configuration.history.map { try JSONTemplate(compiling: $0, keyPath: "history") }
    }

    func render(_ event: Event, context: StageContext) async throws -> [RenderedNotification] {
        let templateContext = TemplateContext(event: event, vars: vars)
        var payload = custom.render(templateContext)?.objectValue ?? [:]
        payload["aps"] = aps.render(templateContext)
        let rendered = JSON.object(payload)
        let renderedOptions = options.render(templateContext)?.objectValue ?? [:]
        let record = history?.render(templateContext)
        return RenderedNotification.each(
            of: try await context.tokens(for: event, kind: configuration.tokenKind),
            payload: rendered,
            options: renderedOptions,
            historyRecord: record
        )
    }
}
