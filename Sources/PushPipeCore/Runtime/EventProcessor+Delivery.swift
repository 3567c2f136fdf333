import Foundation
import Logging

/// One event's notifications on their way: each one's request and how its attempts ended.
struct Delivering: Sendable {
    var event: Event
    var notifications: [RenderedNotification]
    var attempts: [Attempt] = []

    struct Attempt: Sendable {
        var request: OutgoingRequest?
        var outcome: TransportOutcome
        /// Attempts made (0 when nothing was sent: refused, or a dry run).
        var count: Int
        /// The delivery metric's outcome when it is not the transport's (`refused`).
        var reported: ReportedOutcome?
        /// Not sent because its origin asked this sender to wait: the retry waits that out
        /// without spending an attempt.
        var held = false
        /// Prepared and never sent nor held: the drain timeout stopped its batch first.
        var notSentYet = false
        /// Written already, by a checkpoint of its broadcast page: the page's own write leaves it out.
        var recorded = false
    }

    func needsRetry(within limit: Int) -> Bool {
        attempts.contains { $0.isRetried(within: limit) }
    }
}

extension Delivering.Attempt {
    /// Only what was sent is retried: a refused notification or a dry run made no attempt.
    func isRetried(within limit: Int) -> Bool {
        guard count > 0 || held, case .retryAfter = outcome else { return false }
        return count < limit && !Task.isCancelled
    }
}

/// What one event's batch of deliveries writes.
struct Outcome: Sendable {
    var delivering: Delivering
    var deliveries: [Delivery]
    var state: [StateWrite]
    /// Users whose history of the event an earlier write carried (a checkpoint of the same
    /// broadcast page): a user's history holds the event once.
    var historyWritten: Set<String> = []
}

extension EventProcessor {
    /// Prepares every notification, then sends the first attempt of each, `together` at a time
    /// through the transport's batch send: one wait for many answers. `between` sees the
    /// outcomes after each batch (a broadcast records its page as it goes); it may mark
    /// attempts, never add or remove any.
    func attemptFirst(
        _ deliverings: inout [Delivering],
        together: Int,
        between: (inout [Delivering]) async -> Void = { _ in }
    ) async {
        var sending: [(delivering: Int, notification: Int)] = []
        for index in deliverings.indices {
            let event = deliverings[index].event
            var attempts: [Delivering.Attempt] = []
            attempts.reserveCapacity(deliverings[index].notifications.count)
            for notification in deliverings[index].notifications {
                do {
                    let request = try definition.transport.stage.prepare(notification, context: transportContext)
                    onRequest?(request)
                    telemetry.request(event, request)
                    // Replaced by the first attempt's outcome below.
                    sending.append((index, attempts.count))
                    attempts.append(
                        .init(request: request, outcome: .retryAfter(seconds: nil, reason: .other("not sent yet")), count: 0, notSentYet: true)
                    )
                } catch {
                    // The transport refused the notification before sending (not an APNs token, too large).
                    attempts.append(.init(request: nil, outcome: .configError(reason: .other("\(error)")), count: 0, reported: .refused))
                }
            }
            deliverings[index].attempts = attempts
        }
        var start = 0
        let sendsNothing = definition.transport.stage.sendsNothing
        // Stopped (the drain timeout): what is not sent yet stays so, and its event is let go
        // of; sending the rest, `together` at a time, would make a stop wait on a slow provider.
        while start < sending.count, !Task.isCancelled {
            var chunk = Array(sending[start..<min(sending.count, start + max(1, together))])
            start += chunk.count
            if !sendsNothing, gate.anyPause() {
                // Requests to an origin that asked to wait are held for the retry, the rest go.
                chunk.removeAll { place in
                    let request = deliverings[place.delivering].attempts[place.notification].request!
                    let scope = pauseScope(of: request)
                    guard let pause = gate.remainingPause(of: scope) else { return false }
                    let seconds = pause.inSeconds
                    deliverings[place.delivering].attempts[place.notification].outcome = .retryAfter(
                        seconds: seconds,
                        reason: .other("held: \(shownScope(of: request)) asked to wait")
                    )
                    // Its retry waits the pause out, or ends it unresolved when it is too long (`waitsTooLong`).
                    deliverings[place.delivering].attempts[place.notification].held = true
                    deliverings[place.delivering].attempts[place.notification].notSentYet = false
                    return true
                }
                if chunk.isEmpty { continue }
            }
            let requests = chunk.map { deliverings[$0.delivering].attempts[$0.notification].request! }
            if !sendsNothing { await gate.admit(requests.count) }
            if Task.isCancelled { break }
            let spans =
                tracer == nil
                ? []
                : chunk.map { attemptSpan(deliverings[$0.delivering].event, deliverings[$0.delivering].notifications[$0.notification], attempt: 1) }
            let outcomes = await definition.transport.stage.send(batch: requests, context: transportContext).map(\.sanitized)
            pauseIfAsked(requests, outcomes)
            for (offset, (place, outcome)) in zip(chunk, outcomes).enumerated() {
                deliverings[place.delivering].attempts[place.notification].outcome = outcome
                deliverings[place.delivering].attempts[place.notification].count = sendsNothing ? 0 : 1
                if sendsNothing { deliverings[place.delivering].attempts[place.notification].reported = .dryRun }
                deliverings[place.delivering].attempts[place.notification].notSentYet = false
                if !spans.isEmpty { Self.end(spans[offset], outcome) }
            }
            await between(&deliverings)
        }
    }

    /// Attempts again, one by one with backoff, every notification whose last outcome was
    /// `retry-after`, at most `delivery.fanout` at once. `between` sees the outcomes each time a
    /// notification's retries end, as `attemptFirst`'s does.
    func retry(_ deliverings: inout [Delivering], between: (inout [Delivering]) async -> Void = { _ in }) async {
        let limit = definition.delivery.attempts
        var retrying: [(delivering: Int, notification: Int)] = []
        for index in deliverings.indices {
            for (position, attempt) in deliverings[index].attempts.enumerated() where attempt.isRetried(within: limit) {
                retrying.append((index, position))
            }
        }
        guard !retrying.isEmpty else { return }
        let fanout = definition.delivery.fanout
        await withTaskGroup(of: (Int, Delivering.Attempt).self) { group in
            for (slot, place) in retrying.enumerated() {
                if slot >= fanout, let (done, attempt) = await group.next() {
                    deliverings[retrying[done].delivering].attempts[retrying[done].notification] = attempt
                    await between(&deliverings)
                }
                let event = deliverings[place.delivering].event
                let attempt = deliverings[place.delivering].attempts[place.notification]
                let notification = deliverings[place.delivering].notifications[place.notification]
                group.addTask { (slot, await self.retry(attempt, of: notification, event: event)) }
            }
            for await (done, attempt) in group {
                deliverings[retrying[done].delivering].attempts[retrying[done].notification] = attempt
                await between(&deliverings)
            }
        }
    }

    private func retry(_ first: Delivering.Attempt, of notification: RenderedNotification, event: Event) async -> Delivering.Attempt {
        var attempt = first
        let token = notification.token
        while attempt.isRetried(within: definition.delivery.attempts), case .retryAfter(_, let reason) = attempt.outcome,
            let request = attempt.request
        {
            let scope = pauseScope(of: request)
            if attempt.held {
                attempt.held = false
            } else {
                let delay = definition.delivery.delay(afterAttempt: attempt.count, hint: attempt.outcome.retryHint)
                if waitsTooLong(delay) { break }
                telemetry.retry()
                if let suppressed = repeatedFailures.admit("retry: \(reason.text)") {
                    let wait = String(format: "%.2f", delay.inSeconds)
                    logger.warning(
                        "delivery to \(token.masked) will be retried in \(wait)s: \(reason)\(repeatedFailures.summary(suppressed))",
                        metadata: Self.metadata(event, token: token, stage: definition.transport.id)
                    )
                }
                // Cancelled (the drain timeout): no further attempt; the outcome stays a retry.
                do { try await clock.sleep(for: delay) } catch { break }
            }
            // A pause longer than a destination a user chose may hold the notification (it can
            // be extended by the next answer): it ends unresolved instead.
            if let pause = gate.remainingPause(of: scope), waitsTooLong(pause) { break }
            await gate.waitOutPause(of: scope)
            if Task.isCancelled { break }
            await gate.admit(1)
            let span = attemptSpan(event, notification, attempt: attempt.count + 1)
            attempt.outcome = await definition.transport.stage.send(request, context: transportContext).sanitized
            pauseIfAsked([request], [attempt.outcome])
            attempt.count += 1
            Self.end(span, attempt.outcome)
        }
        return attempt
    }

    /// What a provider's pause holds: its origin (APNs, FCM: the pipeline's provider), or for
    /// destinations users chose, the one endpoint (a subscription), since many users share a
    /// push service (fcm.googleapis.com, web.push.apple.com) and one subscriber's answer must
    /// not hold the others'.
    func pauseScope(of request: OutgoingRequest) -> String {
        definition.transport.stage.destinationsAreUserChosen ? request.url : TransportGate.scope(of: request.url)
    }

    /// The scope as logs and reasons may show it: a subscription's endpoint cut as the tap cuts it.
    func shownScope(of request: OutgoingRequest) -> String {
        definition.transport.stage.destinationsAreUserChosen
            ? TokenMask.maskURL(request.url, token: request.token.value)
            : TransportGate.scope(of: request.url)
    }

    /// Whether a wait is longer than a destination a user chose may make a notification wait:
    /// `max_backoff`. The pipeline's own provider is waited for as long as it asks.
    func waitsTooLong(_ wait: Duration) -> Bool {
        definition.transport.stage.destinationsAreUserChosen && wait > definition.delivery.maxBackoff
    }

    /// A provider that throttled this sender pauses later sends to its origin (`TransportGate`),
    /// once per answer that asked, the longest pause winning.
    func pauseIfAsked(_ requests: [OutgoingRequest], _ outcomes: [TransportOutcome]) {
        for (request, outcome) in zip(requests, outcomes) {
            guard let pause = outcome.providerPause else { continue }
            let scope = pauseScope(of: request)
            let wasPaused = gate.pause(scope, for: pause)
            telemetry.telemetry.increment(.transportPauses, [("pipeline", definition.name), ("transport", definition.transport.type)])
            if !wasPaused, repeatedFailures.admit("pause: \(definition.transport.type)") != nil {
                let wait = String(format: "%.1f", pause.inSeconds)
                logger.warning(
                    "the provider throttled \(definition.transport.type): sends to \(shownScope(of: request)) wait \(wait) s (its Retry-After)"
                )
            }
        }
    }

    /// Counts and applies each notification's final outcome (a dead token is removed).
    func settle(_ delivering: Delivering, at now: Double) async -> [Delivery] {
        for (notification, attempt) in zip(delivering.notifications, delivering.attempts) {
            telemetry.delivery(
                delivering.event,
                notification,
                outcome: attempt.reported ?? ReportedOutcome(attempt.outcome.outcome),
                reason: attempt.outcome.providerReason,
                attempts: attempt.count
            )
            await apply(attempt.outcome, to: notification, event: delivering.event, attempts: attempt.count)
        }
        return deliveries(of: delivering, at: now)
    }

    /// Each notification's final outcome, nothing applied yet (`settle` applies it).
    func deliveries(of delivering: Delivering, at now: Double) -> [Delivery] {
        zip(delivering.notifications, delivering.attempts).map { notification, attempt in
            Delivery(attempt.outcome, to: notification.token, transport: definition.transport.type, attempts: attempt.count, at: now)
        }
    }

    /// The deliveries and history of several events, in one transaction, with the watermarks of
    /// those fully delivered and the devices reached of those delivered in part; a broadcast
    /// writes its watermarks separately once the whole event is known to be delivered. With the
    /// removal of the queue items of the events it `finishing`s and the cursors of broadcasts'
    /// `progress`: whether it wrote them.
    @discardableResult
    func record(
        _ outcomes: [Outcome],
        events: [EventRecord] = [],
        finishing: [Event.QueueItem] = [],
        progress: [WorkItem] = []
    ) async -> Bool {
        let (rows, state) = rows(of: outcomes)
        let webhooks = webhookOutcomes(of: events, at: clock.now)
        // Sent is sent: the outcome is written however long the store is away (its watermarks
        // keep the event from going out again, its removal from a queue waits for it), and the
        // event holds its place in the pipeline meanwhile, so new work waits too. A stop past
        // the drain timeout gives it `recordGrace` more, shared with the stop's other writes (a
        // page not recorded goes out again at the next start), then gives it up.
        let written = try? await uncancelled(until: { [stopDeadline] in stopDeadline.after(Self.recordGrace) }) { [self, rows, state] in
            await write(outcomes, rows: rows, state: state, events: events, webhooks: webhooks, finishing: finishing, progress: progress)
        }
        return written ?? false
    }

    /// `record` tried once, for a broadcast's start and its page's checkpoints (the page's own
    /// write follows in any case, so an absent store holds up no sending): whether the store took it.
    @discardableResult
    func recordOnce(_ outcomes: [Outcome], events: [EventRecord], progress: [WorkItem]) async -> Bool {
        let (rows, state) = rows(of: outcomes)
        let webhooks = webhookOutcomes(of: events, at: clock.now)
        do {
            try await pipelineStore.recordOutcome(
                deliveries: rows,
                state: state,
                events: events,
                webhooks: webhooks,
                finishing: [],
                progress: progress
            )
        } catch {
            return false
        }
        if !webhooks.isEmpty { onWebhookOutcomes?() }
        return true
    }

    /// What `outcomes` write: a row per delivery, the first to reach each user carrying their
    /// history record of the event, and the watermarks (whole or per device) they move.
    private func rows(of outcomes: [Outcome]) -> ([DeliveryRow], [StateWrite]) {
        var rows: [DeliveryRow] = []
        var state: [StateWrite] = []
        for outcome in outcomes {
            var historyUsers = outcome.historyWritten
            for (notification, delivery) in zip(outcome.delivering.notifications, outcome.deliveries) {
                var history: DeliveryRow.Record?
                if delivery.outcome == .delivered, historyUsers.insert(delivery.user).inserted {
                    history = notification.historyRecord.map(DeliveryRow.Record.json) ?? .serialized(notification.payloadBytes)
                }
                rows.append(DeliveryRow(eventID: outcome.delivering.event.id, delivery: delivery, history: history))
            }
            state += outcome.state + deviceProgress(of: outcome)
        }
        return (rows, state)
    }

    /// How long the outcomes' writes outlive the first cancellation of an event (the drain timeout).
    static var recordGrace: Duration { .seconds(10) }

    private func write(
        _ outcomes: [Outcome],
        rows: [DeliveryRow],
        state: [StateWrite],
        events: [EventRecord],
        webhooks: [WebhookOutcome],
        finishing: [Event.QueueItem],
        progress: [WorkItem]
    ) async -> Bool {
        var failedAttempts = 0
        do {
            try await retrying(
                while: { _ in true },
                failed: { error, failures in
                    failedAttempts = failures
                    // An unavailable store logged that itself, once; anything else is told now and then.
                    if failures % 30 == 1, !StoreAvailability.meansAway(error) {
                        logger.warning("the outcome of \(outcomes.count) events is not recorded yet (retried until the store takes it): \(error)")
                    }
                }
            ) {
                try await pipelineStore.recordOutcome(
                    deliveries: rows,
                    state: state,
                    events: events,
                    webhooks: webhooks,
                    finishing: finishing,
                    progress: progress
                )
            }
            if !webhooks.isEmpty { onWebhookOutcomes?() }
            if failedAttempts > 0 { logger.notice("recorded the outcome of \(outcomes.count) events after \(failedAttempts) failed attempts") }
            return true
        } catch let refusal as StoreDataError {
            // Not retried: the same data is refused again (see `recordRefused`); the events
            // leave their queue after their dead letters (`complete`).
            await recordRefused(outcomes, events: events, progress: progress, because: refusal)
        } catch {
            for outcome in outcomes {
                logger.error("stopped before the outcome was recorded", metadata: Self.metadata(outcome.delivering.event))
            }
        }
        return false
    }

    private func apply(_ outcome: TransportOutcome, to notification: RenderedNotification, event: Event, attempts: Int) async {
        let token = notification.token
        func context() -> Logger.Metadata { Self.metadata(event, token: token, stage: definition.transport.id) }
        switch outcome {
        case .delivered:
            break
        case .retryAfter(_, let reason):
            if let suppressed = repeatedFailures.admit("failed: \(reason.text)") {
                logger.error(
                    "delivery to \(token.masked) failed after \(attempts) attempts: \(reason)\(repeatedFailures.summary(suppressed))",
                    metadata: context()
                )
            }
        case .dropToken(let reason, let since):
            do {
                let removed = try await pipelineStore.removeToken(kind: token.kind, token: token.value, unlessUpdatedAfter: since)
                if removed {
                    telemetry.tokenPruned()
                    logger.notice("removed dead \(token.kind) token \(token.masked) of user \(token.user): \(reason)", metadata: context())
                } else {
                    logger.notice(
                        "kept \(token.kind) token \(token.masked): re-registered after the provider declared it dead (\(reason))",
                        metadata: context()
                    )
                }
            } catch {
                logger.error("could not remove dead token \(token.masked): \(error)", metadata: context())
            }
        case .configError(let reason):
            if reportedConfigErrors.admit(reason.text) != nil {
                logger.critical("configuration error in pipeline \(definition.name), not retried: \(reason)", metadata: context())
            }
        }
    }
}
