/// The `idempotency:` key of a pipeline: how long the answers to requests that carried an
/// `Idempotency-Key` are kept, so a retry within that time gets the first answer again.
public struct IdempotencyPolicy: Sendable, Decodable, Equatable {
    @Seconds public var ttl: Duration

    public static let schema = Schema([
        SchemaKey(
            "ttl",
            .duration,
            default: 86_400,
            in: hold.inSeconds...Double.infinity,
            "How long a key and its answer are kept (at least as long as a request holds its key): a request repeated with the key within it "
                + "gets the first answer "
                + "again."
        )
    ])

    public static let defaults = IdempotencyPolicy(ttl: .seconds(86_400))

    /// How long a request may take to store its event before the key is free again (its daemon
    /// died). Longer than a store waits for a statement's answer (PostgreSQL: statement_timeout
    /// + 5 s, 35 s by default), so a slow store does not free a key its request still holds; a
    /// `ttl` shorter than this would delete live holds, and is refused.
    public static let hold: Duration = .seconds(60)

    public init(ttl: Duration) { self.ttl = ttl }

    var json: JSON { ["ttl": .double(ttl.inSeconds)] }
}
