import PushPipeCore

extension BuiltinStages {
    static var transports: [StageDescriptor] {
        [
            .transport("stdout", StdoutTransport.summary, StdoutTransport.Configuration.self) { configuration, _ in
                StdoutTransport(configuration: configuration)
            },
            .transport("apns", APNsTransport.summary, APNsTransport.Configuration.self) { configuration, context in
                try APNsTransport(configuration: configuration, context: context)
            }.describing(tokens: [APNsTokenFormat()]),
            .transport("fcm", FCMTransport.summary, FCMTransport.Configuration.self) { configuration, context in
                try FCMTransport(configuration: configuration, context: context)
            },
            .transport("webpush", WebPushTransport.summary, WebPushTransport.Configuration.self) { configuration, context in
                try WebPushTransport(configuration: configuration, context: context)
            }.describing(tokens: [WebPushSubscriptionFormat()]),
        ]
    }
}
