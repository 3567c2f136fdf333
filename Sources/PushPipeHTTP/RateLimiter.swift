import PushPipeCore
import Synchronization

/// Token buckets by key (a route and a client address, or a route and a caller), for the
/// routes' `limits`. A bucket is only a number and a time, and one that has refilled says
/// nothing a new one would not: those are forgotten when the table grows, so a flood of
/// addresses cannot grow it without bound.
final class RateLimiter: Sendable {
    private let buckets = Mutex<[String: TokenBucket]>([:])
    private let capacity: Int

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    /// Takes a token from `key`'s bucket: nil when admitted, else how long until one is there.
    func admit(_ key: String, _ rate: RouteLimits.Rate, now: Duration = SystemClock().elapsed) -> Duration? {
        buckets.withLock { buckets in
            var bucket = buckets[key] ?? TokenBucket(rate, now: now)
            bucket.refill(rate, now: now)
            let wait: Duration?
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                wait = nil
            } else {
                wait = bucket.wait(until: 1, rate)
            }
            if buckets[key] == nil, buckets.count >= capacity { Self.forgetRefilled(&buckets, rate: rate, now: now, capacity: capacity) }
            buckets[key] = bucket
            return wait
        }
    }

    /// Drops the buckets that would be full by now; if every one is still draining (a flood of
    /// new addresses), all of them: a new bucket admits its burst, no more.
    private static func forgetRefilled(_ buckets: inout [String: TokenBucket], rate: RouteLimits.Rate, now: Duration, capacity: Int) {
        let refill = Duration.seconds(Double(rate.burst) / rate.perSecond)
        buckets = buckets.filter { now - $0.value.updated < refill }
        if buckets.count >= capacity * 9 / 10 { buckets.removeAll(keepingCapacity: true) }
    }

    var count: Int { buckets.withLock { $0.count } }
}
