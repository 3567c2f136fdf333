/// The `retention:` key of a pipeline: how long delivery rows and history are kept.
///
/// Every delivery is a row (its history record rides on it), so without a bound a busy
/// pipeline's database grows by gigabytes a year. Rows older than `max_age` go, and each user
/// keeps at most `per_user` rows (the newest); history pagination keeps working because its
/// cursor is a row id, and a pruned row only ends a listing earlier.
public struct RetentionPolicy: Sendable, Decodable, Equatable {
    @Seconds public var maxAge: Duration
    public var perUser: Int
    @Seconds public var interval: Duration

    public static let schema = Schema([
        SchemaKey("max_age", .duration, default: 15_552_000, "Delivery rows and history older than this are pruned (default 180d)."),
        SchemaKey("per_user", .integer, default: 1000, in: 0...Double.infinity, "Rows kept per user at most (the newest); 0 keeps all."),
        SchemaKey(
            "interval",
            .duration,
            default: 3600,
            in: 1...Double.infinity,
            "How often pruning runs, in small batches that never hold up delivery."
        ),
    ])

    public static let defaults = RetentionPolicy(maxAge: .seconds(15_552_000), perUser: 1000, interval: .seconds(3600))

    public init(maxAge: Duration, perUser: Int, interval: Duration) {
        self.maxAge = maxAge
        self.perUser = perUser
        self.interval = interval
    }

    var json: JSON {
        ["max_age": .double(maxAge.inSeconds), "per_user": .int(Int64(perUser)), "interval": .double(interval.inSeconds)]
    }
}
