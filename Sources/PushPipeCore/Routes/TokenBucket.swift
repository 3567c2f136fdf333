/// A token bucket's state: what both a route's rate limit (`RateLimiter`, which refuses past
/// it) and a transport's `max_rate` (`TransportGate`, which waits) keep per key.
package struct TokenBucket: Sendable {
    /// Below zero: taken ahead of the rate (a gate lets sends go and makes the next one wait).
    package var tokens: Double
    /// When it was last refilled, on a `DaemonClock`'s `elapsed`.
    package var updated: Duration

    /// A full bucket: a newcomer gets its burst.
    package init(_ rate: RouteLimits.Rate, now: Duration) {
        tokens = Double(rate.burst)
        updated = now
    }

    /// Adds what the rate gave since the last look, up to the burst.
    package mutating func refill(_ rate: RouteLimits.Rate, now: Duration) {
        tokens = min(Double(rate.burst), tokens + max(0, (now - updated) / .seconds(1)) * rate.perSecond)
        updated = now
    }

    /// How long until `tokens` reaches `level` again at `rate`.
    package func wait(until level: Double, _ rate: RouteLimits.Rate) -> Duration {
        .seconds(max(0, level - tokens) / rate.perSecond)
    }
}
