import PushPipeCore

/// Stages that serve one app each: the OGS turn poller (Online-Go's API and its player
/// document) and the Sven reply folder. Apart from the generic stages, so that a generic
/// stage never grows an app's case; the composition root registers both.
public enum AppStages {
    public static var all: [any Registrable] {
        [
            StageDescriptor.source("ogs.poller", OGSPoller.summary, OGSPoller.Configuration.self) { configuration, context in
                try OGSPoller(configuration: configuration, context: context)
            },
            StageDescriptor.source("reply.folder", ReplyFolderSource.summary, ReplyFolderSource.Configuration.self) { configuration, context in
                try ReplyFolderSource(configuration: configuration, context: context)
            },
        ]
    }
}
