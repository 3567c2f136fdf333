import PushPipeCore

extension BuiltinStages {
    static var sources: [StageDescriptor] {
        [
            .source("http.event", HTTPEventSource.summary, HTTPEventSource.Configuration.self) { configuration, context in
                try HTTPEventSource(configuration: configuration, context: context)
            },
            .source("reply.folder", ReplyFolderSource.summary, ReplyFolderSource.Configuration.self) { configuration, context in
                try ReplyFolderSource(configuration: configuration, context: context)
            },
            .source("ogs.poller", OGSPoller.summary, OGSPoller.Configuration.self) { configuration, context in
                try OGSPoller(configuration: configuration, context: context)
            },
        ]
    }
}
