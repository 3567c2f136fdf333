import Synchronization

/// Paces one pipeline's transport on this daemon: `delivery.max_rate`, and a pause a provider
/// asked for. A provider that answers "too many" with `Retry-After` (FCM's `QUOTA_EXCEEDED`, an
/// HTTP 429) has throttled the sender, not one notification: every event waits out the pause,
/// instead of each finding out for itself with an attempt of its own.
final class TransportGate: Sendable {
    let rate: RouteLimits.Rate?
    /// Below zero: sends already admitted ahead of the rate, which the next one waits for.
    private let bucket: Mutex<TokenBucket?>
    /// Nanoseconds since `origin` until which sends wait; 0 when there is no pause, so the
    /// common case is one atomic load per batch.
    private let pausedUntil = Atomic<Int64>(0)
    private let origin = ContinuousClock.now

    init(rate: RouteLimits.Rate?) {
        self.rate = rate
        bucket = Mutex(rate.map { TokenBucket($0) })
    }

    /// Waits until `count` sends may go: past any pause, then at the rate. A cancelled wait
    /// (the drain timeout) lets them go at once: the caller is stopping anyway.
    func admit(_ count: Int) async {
        while let pause = remainingPause() {
            do { try await Task.sleep(for: pause) } catch { return }
        }
        guard let rate else { return }
        let wait = bucket.withLock { bucket -> Duration? in
            guard var taken = bucket else { return nil }
            taken.refill(rate, now: .now)
            taken.tokens -= Double(count)
            bucket = taken
            return taken.tokens >= 0 ? nil : taken.wait(until: 0, rate)
        }
        if let wait { try? await Task.sleep(for: wait) }
    }

    /// Holds every send for `seconds` from now (a later pause extends it, an earlier one does not shorten it).
    func pause(seconds: Double) {
        let until = Int64(((.now - origin) / .seconds(1) + seconds) * 1e9)
        var current = pausedUntil.load(ordering: .relaxed)
        while current < until {
            let (exchanged, original) = pausedUntil.compareExchange(expected: current, desired: until, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    /// How long the pause still holds, nil when there is none.
    func remainingPause() -> Duration? {
        let until = pausedUntil.load(ordering: .relaxed)
        guard until > 0 else { return nil }
        let remaining = Double(until) / 1e9 - (.now - origin) / .seconds(1)
        return remaining > 0 ? .seconds(remaining) : nil
    }
}

extension TransportOutcome {
    /// Seconds the provider asked the whole sender to wait: a throttling answer (FCM's
    /// `QUOTA_EXCEEDED`, an HTTP 429) that came with `Retry-After`. APNs' `TooManyRequests`
    /// concerns one device (too many to it) and carries no `Retry-After`: it pauses nothing.
    public var providerPause: Double? {
        guard case .retryAfter(let seconds?, let reason) = self, seconds > 0,
              reason.hasPrefix("QUOTA_EXCEEDED") || reason.hasPrefix("HTTP 429") || reason.hasPrefix("429") else { return nil }
        return min(seconds, 3600)
    }
}
