import PushPipe

extension BuiltinStages {
    static var transports: [StageDescriptor] {
        [
            .transport("stdout", StdoutTransport.summary, StdoutTransport.Configuration.self) { configuration, _ in
                StdoutTransport(configuration: configuration)
            },
        ]
    }
}
