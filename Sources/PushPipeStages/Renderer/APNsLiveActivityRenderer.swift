import PushPipeCore

/// Live Activity pushes (iOS 16.1+): start one with the push-to-start token (iOS 17.2+),
/// update or end a running one with its update token, and fall back to an ordinary alert on
/// the device token when the user has no Live Activity token — saying so in the log. A
/// recipient that owns a broadcast channel (a group, iOS 18) gets one update for every activity
/// on the channel, and a start can join a group's channel (`input_push_channel_of`).
struct APNsLiveActivityRenderer: Renderer {
    static let summary = "Renders Live Activity start/update/end payloads; falls back to an alert on the device token."

    struct Configuration: StageConfiguration {
        var event: String
        var attributesType: String
        var attributes: [String: JSON]
        var contentState: [String: JSON]
        var alert: [String: JSON]?
        var staleDate: JSON?
        var dismissalDate: JSON?
        var relevanceScore: JSON?
        var inputPushToken: Bool
        var priority: Int
        var startTokenKind: String
        var updateTokenKind: String
        var fallbackTokenKind: String
        var broadcastTokenKind: String
        var inputPushChannelOf: String
        var vars: [String: JSON]

        static let schema = Schema([
            SchemaKey(
                "event",
                .oneOf(["auto", "start", "update", "end"]),
                default: "auto",
                "`auto`: update when an update token exists, else start."
            ),
            .required("attributes_type", .string, "Swift type name of the app's ActivityAttributes."),
            SchemaKey("attributes", .map(.any), default: [:], "Static attributes of a start (templated, JSON types kept)."),
            .required("content_state", .map(.any), "The dynamic ContentState (templated, JSON types kept; keys must match the app's type)."),
            SchemaKey(
                "alert",
                .object(
                    Schema([
                        SchemaKey("title", .string, "Title template."),
                        SchemaKey("body", .string, "Body template."),
                        SchemaKey("sound", .string, "Sound name."),
                    ])
                ),
                "Alert of a start (required by iOS) and of the fallback."
            ),
            SchemaKey("stale_date", .any, "UNIX seconds (or `{$from: path}`) when the content is outdated."),
            SchemaKey("dismissal_date", .any, "UNIX seconds (or `{$from: path}`) when an ended activity leaves the lock screen."),
            SchemaKey("relevance_score", .any, "A number: which activity the Dynamic Island shows first."),
            SchemaKey(
                "input_push_token",
                .boolean,
                default: false,
                "iOS 18: send `input-push-token: 1` with a start, asking the device for an update token."
            ),
            SchemaKey("priority", .integer, default: 10, in: [10, 5], "10 counts against the device's update budget; 5 does not."),
            SchemaKey("start_token_kind", .string, default: "push-to-start", "Token kind that starts activities."),
            SchemaKey("update_token_kind", .string, default: "activity-update", "Token kind of a running activity."),
            SchemaKey("fallback_token_kind", .string, default: "device", "Token kind for the fallback alert; empty for none."),
            SchemaKey(
                "broadcast_token_kind",
                .string,
                default: "broadcast-channel",
                "Token kind of a broadcast channel (iOS 18): a recipient with one gets a single update or end for every activity on it. Empty for "
                    + "none."
            ),
            SchemaKey(
                "input_push_channel_of",
                .string,
                default: "",
                "Template naming the token owner (a group) whose broadcast channel a start joins, as `input-push-channel` (iOS 18); rendering "
                    + "empty, none."
            ),
            SchemaKey("vars", .map(.any), default: [:], "Values computed from the event, used as `{{vars.name}}`."),
        ])
    }

    let configuration: Configuration
    let contentState: JSONTemplate
    let attributes: JSONTemplate
    let alert: JSONTemplate?
    let optional: JSONTemplate
    let inputPushChannelOf: JSONTemplate?
    let vars: [String: JSONTemplate]

    init(configuration: Configuration) throws {
        self.configuration = configuration
        if configuration.event == "auto" || configuration.event == "start" {
            guard let alert = configuration.alert, alert["title"] != nil || alert["body"] != nil else {
                throw ConfigurationValueError(
                    keyPath: "alert",
                    "a Live Activity start needs an alert: iOS drops starts without one",
                    expected: "alert: {title: ..., body: ...}"
                )
            }
            guard !configuration.attributesType.isEmpty else {
                throw ConfigurationValueError(
                    keyPath: "attributes_type",
                    "a start needs the attributes type",
                    expected: "e.g. PagerActivityAttributes"
                )
            }
        }
        contentState = try JSONTemplate(compiling: .object(configuration.contentState), keyPath: "content_state")
        attributes = try JSONTemplate(compiling: .object(configuration.attributes), keyPath: "attributes")
        alert = try configuration.alert.map { try JSONTemplate(compiling: .object($0), keyPath: "alert") }
        var optional: [String: JSON] = [:]
        optional["stale-date"] = configuration.staleDate
        optional["dismissal-date"] = configuration.dismissalDate
        optional["relevance-score"] = configuration.relevanceScore
        self.optional = try JSONTemplate(compiling: .object(optional), keyPath: "")
        inputPushChannelOf =
            configuration.inputPushChannelOf.isEmpty
            ? nil
            : try JSONTemplate(compiling: .string(configuration.inputPushChannelOf), keyPath: "input_push_channel_of")
        vars = try configuration.vars.compile(keyPath: "vars")
    }

    func render(_ event: Event, context: StageContext) async throws -> [RenderedNotification] {
        let templates = TemplateContext(event: event, vars: vars)
        if let channel = try await broadcastChannel(of: event, context: context) {
            return [notification(kind: configuration.event == "end" ? "end" : "update", to: channel, templates, event)]
        }
        // A start that joins a group's channel is a new activity, whatever else is running.
        let joining = try await channelToJoin(templates, event: event, context: context)
        let updateTokens =
            configuration.event == "start" || joining != nil ? [] : try await context.tokens(for: event, kind: configuration.updateTokenKind)
        // One running activity per user: the most recently registered update token.
        if let update = updateTokens.first {
            return [notification(kind: configuration.event == "end" ? "end" : "update", to: update, templates, event)]
        }
        if configuration.event == "update" || configuration.event == "end" {
            context.logger.info("no Live Activity update token for user \(event.user ?? "-"); \(configuration.event) skipped")
            return []
        }
        let starts = try await context.tokens(for: event, kind: configuration.startTokenKind)
        if !starts.isEmpty {
            return starts.map { notification(kind: "start", to: $0, templates, event, joining: joining) }
        }
        guard !configuration.fallbackTokenKind.isEmpty else { return [] }
        let devices = try await context.tokens(for: event, kind: configuration.fallbackTokenKind)
        if !devices.isEmpty {
            context.logger.notice(
                "user \(event.user ?? "-") has no push-to-start token (iOS < 17.2 or not registered): sending an ordinary alert instead"
            )
        }
        let alertPayload: JSON = ["aps": ["alert": alert?.render(templates) ?? [:], "sound": "default"]]
        return RenderedNotification.each(of: devices, payload: alertPayload, options: ["push_type": "alert", "priority": 10])
    }

    private func notification(
        kind: String,
        to token: DeviceToken,
        _ templates: TemplateContext,
        _ event: Event,
        joining channel: DeviceToken? = nil
    ) -> RenderedNotification {
        var aps = optional.render(templates)?.objectValue ?? [:]
        aps["event"] = .string(kind)
        aps["timestamp"] = .int(Int64(event.time.timeIntervalSince1970))
        aps["content-state"] = contentState.render(templates)
        if kind == "start" {
            aps["attributes-type"] = .string(configuration.attributesType)
            aps["attributes"] = attributes.render(templates)
            aps["alert"] = alert?.render(templates)
            if configuration.inputPushToken { aps["input-push-token"] = 1 }
            if let channel { aps["input-push-channel"] = .string(channel.value) }
        } else if kind == "end", aps["dismissal-date"] == nil {
            aps["dismissal-date"] = .int(Int64(event.time.timeIntervalSince1970))
        }
        return RenderedNotification(
            token: token,
            payload: ["aps": .object(aps)],
            options: ["push_type": "liveactivity", "priority": .int(Int64(configuration.priority))]
        )
    }
}
