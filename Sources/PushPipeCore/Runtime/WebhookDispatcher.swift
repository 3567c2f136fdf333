import Foundation
import Logging

/// Sends a pipeline's webhook outcomes from the store: claims what is due, POSTs it in batches
/// per receiver, removes what was taken and puts back, with backoff, what was not. Several
/// daemons share the outbox; each batch is one daemon's while it is being sent.
struct WebhookDispatcher: Sendable {
    let targets: [WebhookTarget]
    /// The pipeline's work queue, where its outcomes wait.
    let work: any WorkQueue
    let poster: any WebhookPoster
    let telemetry: Telemetry
    let logger: Logger
    var clock: any DaemonClock = .system
    /// Signals outcomes just written here, so they go out at once rather than at the next look.
    let written = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    let failures = RepeatedMessages(window: .seconds(60))

    var pipeline: String { work.pipeline }

    static var batchLimit: Int { 100 }
    /// How long a claimed batch stays this daemon's: longer than its POSTs may take (one per
    /// webhook, each answered within `StandardWebhookPoster`'s 15 s), and no longer, since
    /// what a daemon killed while sending holds waits that long for another.
    var lease: Duration { .seconds(targets.count * 15 + 5) }
    /// How often the outbox is read when nothing was written here (retries, other daemons' work).
    static var idleLook: Duration { .seconds(2) }
    /// How long an outcome waits for its receiver before retention removes it, unsent.
    static var longestWait: Duration { .seconds(3 * 86_400) }
    /// The longest wait between two attempts.
    static var longestBackoff: Duration { .seconds(600) }
    /// The longest `Retry-After` kept: a receiver asking for days would hold its outcomes past
    /// `longestWait`, and retention would remove them unsent.
    static var longestRetryAfter: Duration { .seconds(3600) }

    func nudge() { written.continuation.yield() }

    func run() async {
        while !Task.isCancelled {
            var full = false
            do {
                full = try await sendDue()
            } catch is CancellationError {
                return
            } catch {
                if let suppressed = failures.admit("outbox: \(error)") {
                    logger.warning("webhooks: the outbox could not be read: \(error)\(failures.summary(suppressed))")
                }
            }
            if full { continue }
            // Whichever comes first: an outcome written here, or the time for the next look.
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await _ in written.stream { return } }
                group.addTask { try? await clock.sleep(for: Self.idleLook) }
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// One round: returns whether a full claim came (more may be due).
    func sendDue() async throws -> Bool {
        let claimed = try await work.claimWebhookOutcomes(limit: Self.batchLimit, lease: lease)
        guard !claimed.isEmpty else { return false }
        for outcomes in Self.batches(claimed) {
            let url = outcomes[0].target
            guard let target = targets.first(where: { $0.url == url }) else {
                // The webhook left the pipeline: nobody waits for these.
                logger.notice("webhooks: \(outcomes.count) outcomes for \(url), no longer a webhook of this pipeline, dropped")
                try await work.complete(WebhookOutcome.kind, keys: Set(outcomes.map(\.key)))
                continue
            }
            let message = Self.message(outcomes, pipeline: pipeline, now: Date(timeIntervalSince1970: clock.now))
            switch await poster.post(message, to: target) {
            case .taken:
                try await work.complete(WebhookOutcome.kind, keys: Set(outcomes.map(\.key)))
                telemetry.increment(.webhookOutcomes, [("pipeline", pipeline), ("result", "taken")], by: outcomes.count)
            case .retry(let seconds, let reason):
                let attempts = outcomes.map(\.attempts).max() ?? 0
                let delay = Self.delay(retryAfter: seconds, afterAttempts: attempts + 1)
                try await work.retry(WebhookOutcome.kind, keys: Set(outcomes.map(\.key)), after: delay)
                telemetry.increment(.webhookOutcomes, [("pipeline", pipeline), ("result", "retried")], by: outcomes.count)
                if let suppressed = failures.admit("post: \(url)") {
                    let wait = String(format: "%.0f", delay.inSeconds)
                    logger.warning(
                        "webhooks: \(url) did not take \(outcomes.count) outcomes (\(reason)); tried again in \(wait)s\(failures.summary(suppressed))"
                    )
                }
            }
        }
        return claimed.count >= Self.batchLimit
    }

    /// The claimed outcomes by the batch the store keeps them in and their webhook, each sent
    /// as it was the first time. Two webhooks told of the same outcomes have batches of the
    /// same name (it depends on the outcomes alone): each gets its own message.
    static func batches(_ claimed: [WebhookOutcome]) -> [[WebhookOutcome]] {
        var batches: [String: [WebhookOutcome]] = [:]
        for outcome in claimed.sorted(by: { $0.id < $1.id }) {
            batches[(outcome.batch ?? "") + "\n" + outcome.target, default: []].append(outcome)
        }
        return batches.values.sorted { $0[0].id < $1[0].id }
    }

    /// The receiver's `Retry-After` when it is a number of seconds we can keep, at most
    /// `longestRetryAfter`; otherwise (none, negative, NaN, infinite) our own backoff. A NaN
    /// would fail the store's update, so the batch would go again at every lease.
    static func delay(retryAfter seconds: Double?, afterAttempts attempts: Int) -> Duration {
        guard let seconds, seconds.isFinite, seconds >= 0 else { return backoff(afterAttempts: attempts) }
        return .seconds(min(seconds, longestRetryAfter.inSeconds))
    }

    /// 1 s, doubling, at most `longestBackoff`, with a tenth of jitter so daemons spread out.
    static func backoff(afterAttempts attempts: Int) -> Duration {
        let base = min(longestBackoff, .seconds(1 << (min(max(attempts, 1), 20) - 1)))
        return base * Double.random(in: 0.9...1.1)
    }

    /// The batch as its receiver gets it. Its id is the batch's, fixed when the store first
    /// claimed these outcomes, so the same outcomes sent again (a retry, another daemon after a
    /// crash) carry the same `webhook-id`, in the same order.
    static func message(_ outcomes: [WebhookOutcome], pipeline: String, now: Date = Date()) -> WebhookMessage {
        let sorted = outcomes.sorted { $0.id < $1.id }
        let id = sorted.first?.batch ?? WebhookOutcome.batchID(outcomeIDs: sorted.map(\.outcomeID))
        let body: JSON = [
            "type": "pushpipe.outcomes", "timestamp": .string(EventRecord.timestamp(now.timeIntervalSince1970)),
            "data": ["pipeline": .string(pipeline), "outcomes": .array(sorted.map(\.payload))],
        ]
        return WebhookMessage(id: id, timestamp: Int64(now.timeIntervalSince1970), body: body)
    }
}

/// FNV-1a over 128 bits, as hex: an id that depends only on its input, the same in every
/// process (Swift's `Hasher` is seeded per process). Not for secrets.
enum StableHash {
    static func hex(_ text: String) -> String {
        var low: UInt64 = 0xcbf2_9ce4_8422_2325
        var high: UInt64 = 0x6c62_272e_07bb_0142
        for byte in text.utf8 {
            low = (low ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            high = (high ^ UInt64(byte) ^ (low >> 29)) &* 0x0000_0100_0000_01b3
        }
        return String(format: "%016llx%016llx", high, low)
    }
}
