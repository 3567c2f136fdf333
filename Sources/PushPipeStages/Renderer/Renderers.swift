import PushPipe

extension BuiltinStages {
    static var renderers: [StageDescriptor] {
        [
            .renderer("json.template", JSONTemplateRenderer.summary, JSONTemplateRenderer.Configuration.self) { configuration, _ in
                try JSONTemplateRenderer(configuration: configuration)
            },
        ]
    }
}
