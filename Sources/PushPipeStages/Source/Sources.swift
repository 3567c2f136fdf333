import PushPipeCore

extension BuiltinStages {
    static var sources: [StageDescriptor] {
        [
            .source("http.event", HTTPEventSource.summary, HTTPEventSource.Configuration.self) { configuration, context in
                try HTTPEventSource(configuration: configuration, context: context)
            }
        ]
    }
}
