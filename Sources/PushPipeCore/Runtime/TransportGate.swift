import Synchronization

/// Paces one pipeline's transport on this daemon: `delivery.max_rate`, and the pauses providers
/// asked for. A provider that answers "too many" with `Retry-After` (FCM's `QUOTA_EXCEEDED`, an
/// HTTP 429) has throttled the sender, not one notification, so later sends to it wait out the
/// pause instead of each finding out for itself. A pause holds only the origin that asked
/// (`scope(of:)`): a Web Push subscriber's own push service, which anyone can run, pauses its
/// own subscriptions and no one else's; FCM, one origin per pipeline, pauses the pipeline.
final class TransportGate: Sendable {
    /// The longest pause one answer can ask for.
    static let longestPause: Duration = .seconds(900)
    /// Origins paused at once at most; the oldest pauses go first beyond it.
    static let mostPausedOrigins = 10_000

    let rate: RouteLimits.Rate?
    /// Below zero: sends already admitted ahead of the rate, which the next one waits for.
    private let bucket: Mutex<TokenBucket?>
    /// When each paused origin may be sent to again, on `clock.elapsed`.
    private let pauses = Mutex<[String: Duration]>([:])
    /// Nanoseconds of `clock.elapsed` until which some pause holds; 0 when none does, so the
    /// common case is one atomic load per batch.
    private let anyPauseUntil = Atomic<Int64>(0)
    private let clock: any DaemonClock

    init(rate: RouteLimits.Rate?, clock: any DaemonClock = .system) {
        self.rate = rate
        self.clock = clock
        bucket = Mutex(rate.map { TokenBucket($0, now: clock.elapsed) })
    }

    /// Waits until `count` sends may go at the rate. A cancelled wait (the drain timeout) lets
    /// them go at once: the caller is stopping anyway.
    func admit(_ count: Int) async {
        guard let rate else { return }
        let wait = bucket.withLock { bucket -> Duration? in
            guard var taken = bucket else { return nil }
            taken.refill(rate, now: clock.elapsed)
            taken.tokens -= Double(count)
            bucket = taken
            return taken.tokens >= 0 ? nil : taken.wait(until: 0, rate)
        }
        if let wait { try? await clock.sleep(for: wait) }
    }

    /// Waits while `scope` is paused (cancelled: returns at once).
    func waitOutPause(of scope: String) async {
        while let pause = remainingPause(of: scope) {
            do { try await clock.sleep(for: pause) } catch { return }
        }
    }

    /// Holds sends to `scope` for `wait` from now, at most `longestPause` (a later pause
    /// extends it, an earlier one does not shorten it). Returns whether it was paused already.
    @discardableResult
    func pause(_ scope: String, for wait: Duration) -> Bool {
        let now = clock.elapsed
        let until = now + min(max(wait, .zero), Self.longestPause)
        let wasPaused = pauses.withLock { pauses in
            let current = pauses[scope]
            if current.map({ $0 < until }) ?? true { pauses[scope] = until }
            if pauses.count > Self.mostPausedOrigins {
                pauses = pauses.filter { $0.value > now }
                while pauses.count > Self.mostPausedOrigins, let oldest = pauses.min(by: { $0.value < $1.value }) { pauses[oldest.key] = nil }
            }
            return current.map { $0 > now } ?? false
        }
        let nanoseconds = Int64(until / .nanoseconds(1))
        var latest = anyPauseUntil.load(ordering: .relaxed)
        while latest < nanoseconds {
            let (exchanged, original) = anyPauseUntil.compareExchange(expected: latest, desired: nanoseconds, ordering: .relaxed)
            if exchanged { break }
            latest = original
        }
        return wasPaused
    }

    /// Whether any origin may still be paused: one atomic load, for the common case of none.
    func anyPause() -> Bool {
        let latest = anyPauseUntil.load(ordering: .relaxed)
        return latest > 0 && .nanoseconds(latest) > clock.elapsed
    }

    /// How long the pause of `scope` still holds, nil when there is none.
    func remainingPause(of scope: String) -> Duration? {
        guard anyPause() else { return nil }
        let now = clock.elapsed
        guard let until = pauses.withLock({ $0[scope] }), until > now else { return nil }
        return until - now
    }

    /// What a pause is about: the request's origin (`https://fcm.googleapis.com`, a push
    /// service's `https://updates.push.services.mozilla.com`), scheme, host and port.
    static func scope(of url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        let hostEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        return url[..<schemeEnd.upperBound].lowercased() + rest[..<hostEnd].lowercased()
    }
}

extension TransportOutcome {
    /// How long the provider asked the whole sender to wait: a throttling answer
    /// (`ProviderReason.throttlesSender`) that came with `Retry-After`. APNs' `TooManyRequests`
    /// concerns one device (too many to it) and carries no `Retry-After`: it pauses nothing.
    public var providerPause: Duration? {
        guard case .retryAfter(_, let reason) = self, reason.throttlesSender, let wait = retryHint, wait > .zero else { return nil }
        return min(wait, TransportGate.longestPause)
    }
}
