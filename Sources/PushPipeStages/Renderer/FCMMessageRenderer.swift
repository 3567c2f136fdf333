import PushPipeCore

/// An FCM HTTP v1 `message` (the transport adds the `token`).
///
/// FCM rejects any non-string `data` value, so every value is rendered to a string and null
/// or missing values are left out; the history record keeps them as null, which is what the
/// app's history screen shows.
struct FCMMessageRenderer: Renderer {
    static let summary = "Renders an FCM v1 message (notification, string-only data, apns/android overrides)."

    struct Configuration: StageConfiguration {
        var tokenKind: String
        var notification: [String: JSON]?
        var data: [String: JSON]
        var apns: JSON?
        var android: JSON?
        var history: JSON?
        var vars: [String: JSON]

        static let schema = Schema([
            SchemaKey("token_kind", .string, default: "fcm", "Which registered tokens receive the message."),
            SchemaKey(
                "notification",
                .object(
                    Schema([
                        SchemaKey("title", .string, "Title template."),
                        SchemaKey("body", .string, "Body template."),
                        SchemaKey("image", .string, "Image URL template."),
                    ])
                ),
                "The visible notification."
            ),
            SchemaKey("data", .map(.any), default: [:], "Data values (sent as strings; null/missing omitted)."),
            SchemaKey("apns", .any, "APNs override (headers, payload), templated."),
            SchemaKey("android", .any, "Android override, templated."),
            SchemaKey("history", .any, "What the history route shows; {notification, data} with nulls kept by default."),
            SchemaKey("vars", .map(.any), default: [:], "Values computed from the event, used as `{{vars.name}}`."),
        ])
    }

    let configuration: Configuration
    let notification: JSONTemplate?
    let data: JSONTemplate
    let overrides: JSONTemplate
    let history: JSONTemplate?
    let vars: [String: JSONTemplate]

    init(configuration: Configuration) throws {
        self.configuration = configuration
        notification = try configuration.notification.map { try JSONTemplate(compiling: .object($0), keyPath: "notification") }
        data = try JSONTemplate(compiling: .object(configuration.data), keyPath: "data")
        var overrides: [String: JSON] = [:]
        overrides["apns"] = configuration.apns
        overrides["android"] = configuration.android
        self.overrides = try JSONTemplate(compiling: .object(overrides), keyPath: "")
        history = try configuration.history.map { try JSONTemplate(compiling: $0, keyPath: "history") }
        vars = try configuration.vars.compile(keyPath: "vars")
    }

    func render(_ event: Event, context: StageContext) async throws -> [RenderedNotification] {
        let templates = TemplateContext(event: event, vars: vars)
        var message = overrides.render(templates)?.objectValue ?? [:]
        let renderedNotification = notification?.render(templates)
        if let renderedNotification { message["notification"] = renderedNotification }
        let renderedData = data.render(templates)?.objectValue ?? [:]
        // Only strings travel; a null stays in history only.
        let strings = renderedData.compactMapValues { value -> JSON? in value == .null ? nil : value.textValue.map(JSON.string) }
        if !strings.isEmpty { message["data"] = .object(strings) }
        var record: JSON = ["notification": renderedNotification ?? .null, "data": .object(renderedData)]
        if let history { record = history.render(templates) ?? .null }
        let payload = JSON.object(message)
        return RenderedNotification.each(
            of: try await context.tokens(for: event, kind: configuration.tokenKind),
            payload: payload,
            historyRecord: record
        )
    }
}
