import PushPipeCore

extension BuiltinStages {
    static var renderers: [StageDescriptor] {
        [
            .renderer("json.template", JSONTemplateRenderer.summary, JSONTemplateRenderer.Configuration.self) { configuration, _ in
                try JSONTemplateRenderer(configuration: configuration)
            },
            .renderer("apns.alert", APNsAlertRenderer.summary, APNsAlertRenderer.Configuration.self) { configuration, _ in
                try APNsAlertRenderer(configuration: configuration)
            },
            .renderer("apns.live-activity", APNsLiveActivityRenderer.summary, APNsLiveActivityRenderer.Configuration.self) { configuration, _ in
                try APNsLiveActivityRenderer(configuration: configuration)
            },
            .renderer("fcm.message", FCMMessageRenderer.summary, FCMMessageRenderer.Configuration.self) { configuration, _ in
                try FCMMessageRenderer(configuration: configuration)
            },
            .renderer("webpush", WebPushRenderer.summary, WebPushRenderer.Configuration.self) { configuration, _ in
                try WebPushRenderer(configuration: configuration)
            },
        ]
    }
}
