/// The keys of a pipeline file. Stage keys come from the registry, so a plugin's schema is
/// checked exactly like a built-in's.
public enum PipelineSchema {
    public static func schema(registry: StageRegistry) -> Schema {
        Schema([
            .required("pipeline", .string, "Name of the pipeline: letters, digits, `-` and `_`."),
            SchemaKey("description", .string, "What the pipeline is for."),
            SchemaKey(
                "routes",
                .list(RouteAction.valueType(registry.routeActions)),
                default: [],
                "HTTP routes: register tokens, settings, history, diagnostics."
            ),
            .required("sources", .list(registry.stageType(kind: .source)), "Where events come from."),
            SchemaKey("filters", .list(registry.stageType(kind: .filter)), default: [], "Filters, in order; any may drop the event."),
            .required("renderer", registry.stageType(kind: .renderer), "Builds the payload per recipient token."),
            .required("transport", registry.stageType(kind: .transport), "Delivers the payloads."),
            SchemaKey("delivery", .object(DeliveryPolicy.schema), default: DeliveryPolicy.defaults.json, "Concurrency and retries."),
            SchemaKey(
                "retention",
                .object(RetentionPolicy.schema),
                default: RetentionPolicy.defaults.json,
                "How long delivery rows and history are kept."
            ),
            SchemaKey(
                "idempotency",
                .object(IdempotencyPolicy.schema),
                default: IdempotencyPolicy.defaults.json,
                "How long event routes remember an `Idempotency-Key` and the answer given for it."
            ),
            SchemaKey(
                "webhooks",
                .list(.object(WebhookTarget.schema)),
                default: [],
                "Where to POST outcomes (delivered, failed, dead tokens, dead letters), signed as Standard Webhooks say; kept in the store until "
                    + "the receiver takes them."
            ),
        ])
    }
}
