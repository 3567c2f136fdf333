/// The `delivery:` key of a pipeline: how many events are in flight and how retries back off.
public struct DeliveryPolicy: Sendable, Decodable, Equatable {
    public var concurrency: Int
    public var attempts: Int
    @Seconds public var backoff: Duration
    @Seconds public var maxBackoff: Duration
    @Seconds public var drainTimeout: Duration
    public var fanout: Int
    /// `N/s`, `N/min` or `off`: sends per second through the transport, on this daemon.
    public var maxRate: String

    public static let schema = Schema([
        SchemaKey("concurrency", .integer, default: 32, in: 1...10_000, "Events processed at once; also the bound on memory."),
        SchemaKey("attempts", .integer, default: 5, in: 1...Double.infinity, "Tries per notification on `retry-after` outcomes."),
        SchemaKey("backoff", .duration, default: 0.5, "First retry delay; doubles each attempt, with jitter."),
        SchemaKey("max_backoff", .duration, default: 30, "Largest retry delay."),
        SchemaKey("drain_timeout", .duration, default: 10, "How long a stopping pipeline waits for in-flight events."),
        SchemaKey("fanout", .integer, default: 64, in: 1...10_000, "Deliveries of one event in flight at once (a broadcast's tokens)."),
        SchemaKey(
            "max_rate",
            .string,
            default: "off",
            "Sends per second through the transport, per daemon (`N/s`, `N/min` or `off`): below a provider's quota, so it never has to throttle. "
                + "A provider's own throttling answer with `Retry-After` pauses the transport for every event."
        ),
    ])

    public static let defaults = DeliveryPolicy(
        concurrency: 32,
        attempts: 5,
        backoff: .milliseconds(500),
        maxBackoff: .seconds(30),
        drainTimeout: .seconds(10),
        fanout: 64
    )

    public init(
        concurrency: Int,
        attempts: Int,
        backoff: Duration,
        maxBackoff: Duration,
        drainTimeout: Duration,
        fanout: Int = 64,
        maxRate: String = "off"
    ) {
        self.maxRate = maxRate
        self.concurrency = concurrency
        self.attempts = attempts
        self.backoff = backoff
        self.maxBackoff = maxBackoff
        self.drainTimeout = drainTimeout
        self.fanout = fanout
    }

    /// `max_rate` as a bucket that holds one second of sends (nil: off).
    public func sendRate() throws -> RouteLimits.Rate? {
        guard let rate = try RouteLimits.rate(.string(maxRate), burst: 1, key: "max_rate") else { return nil }
        return RouteLimits.Rate(perSecond: rate.perSecond, burst: max(1, Int(rate.perSecond.rounded(.up))))
    }

    /// Exponential backoff with jitter, never sooner than the provider asked: its
    /// `Retry-After` wins over `max_backoff` (up to an hour, against absurd values).
    public func delay(afterAttempt attempt: Int, hint: Duration?) -> Duration {
        let exponential = min(maxBackoff, backoff * (1 << min(attempt - 1, 20)))
        let jittered = exponential * Double.random(in: 0.5...1.0)
        return max(jittered, min(hint ?? .zero, TransportOutcome.longestRetryHint))
    }

    var json: JSON {
        [
            "concurrency": .int(Int64(concurrency)), "attempts": .int(Int64(attempts)), "backoff": .double(backoff.inSeconds),
            "max_backoff": .double(maxBackoff.inSeconds), "drain_timeout": .double(drainTimeout.inSeconds),
            "fanout": .int(Int64(fanout)), "max_rate": .string(maxRate),
        ]
    }
}
