/// The `delivery:` key of a pipeline: how many events are in flight and how retries back off.
public struct DeliveryPolicy: Sendable, Decodable, Equatable {
    public var concurrency: Int
    public var attempts: Int
    public var backoff: Double
    public var maxBackoff: Double
    public var drainTimeout: Double
    public var fanout: Int

    public static let schema = Schema([
        SchemaKey("concurrency", .integer, default: 32, "Events processed at once; also the bound on memory."),
        SchemaKey("attempts", .integer, default: 5, "Tries per notification on `retry-after` outcomes."),
        SchemaKey("backoff", .duration, default: 0.5, "First retry delay; doubles each attempt, with jitter."),
        SchemaKey("max_backoff", .duration, default: 30, "Largest retry delay."),
        SchemaKey("drain_timeout", .duration, default: 10, "How long a stopping pipeline waits for in-flight events."),
        SchemaKey("fanout", .integer, default: 64, "Deliveries of one event in flight at once (a broadcast's tokens)."),
    ])

    public static let defaults = DeliveryPolicy(concurrency: 32, attempts: 5, backoff: 0.5, maxBackoff: 30, drainTimeout: 10, fanout: 64)

    public init(concurrency: Int, attempts: Int, backoff: Double, maxBackoff: Double, drainTimeout: Double, fanout: Int = 64) {
        self.concurrency = concurrency
        self.attempts = attempts
        self.backoff = backoff
        self.maxBackoff = maxBackoff
        self.drainTimeout = drainTimeout
        self.fanout = fanout
    }

    /// Exponential backoff with jitter, never sooner than the provider asked: its
    /// `Retry-After` wins over `max_backoff` (up to an hour, against absurd values).
    public func delay(afterAttempt attempt: Int, hint: Double?) -> Double {
        let exponential = min(maxBackoff, backoff * Double(1 << min(attempt - 1, 20)))
        let jittered = exponential * Double.random(in: 0.5...1.0)
        return max(jittered, min(hint ?? 0, 3600))
    }

    var json: JSON {
        ["concurrency": .int(Int64(concurrency)), "attempts": .int(Int64(attempts)), "backoff": .double(backoff),
         "max_backoff": .double(maxBackoff), "drain_timeout": .double(drainTimeout),
         "fanout": .int(Int64(fanout))]
    }
}
