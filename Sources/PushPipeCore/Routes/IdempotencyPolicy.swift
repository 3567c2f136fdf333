/// The `idempotency:` key of a pipeline: how long the answers to requests that carried an
/// `Idempotency-Key` are kept, so a retry within that time gets the first answer again.
public struct IdempotencyPolicy: Sendable, Decodable, Equatable {
    public var ttl: Double

    public static let schema = Schema([
        SchemaKey("ttl", .duration, default: 86_400,
                  "How long a key and its answer are kept (default 24h): a request repeated with the key within it gets the first answer again."),
    ])

    public static let defaults = IdempotencyPolicy(ttl: 86_400)

    public init(ttl: Double) { self.ttl = ttl }

    var json: JSON { ["ttl": .double(ttl)] }
}
