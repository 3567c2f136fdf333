import Foundation

/// An event's recipients as its record keeps them: the first ones, and those left unresolved
/// (what a replay sends to), at most `unresolvedKeptLimit`, the rest counted: bounded however
/// large a broadcast grows. With a broadcast's progress when it stopped early.
struct RecipientList: Sendable {
    static var keptLimit: Int { 1000 }
    /// Unresolved recipients after which a broadcast stops (a dead letter with its progress,
    /// for a replay once the provider is back) rather than keep more of them.
    static var unresolvedLimit: Int { 5000 }
    /// Unresolved recipients a record keeps at most: beyond, they are only counted.
    static var unresolvedKeptLimit: Int { 2 * unresolvedLimit }

    private(set) var kept: [Delivery] = []
    private(set) var omitted = 0
    private(set) var unresolved = 0
    /// A broadcast's progress, which its record keeps: where it stopped, or that it reached
    /// every user (`reachedAll`).
    var progress: BroadcastProgress?

    init() {}

    /// The recipients a broadcast's record kept of its pages so far (it resumes).
    init(resuming record: EventRecord) {
        kept = record.recipients
        omitted = record.omittedRecipients
        unresolved = record.recipients.count(where: \.isUnresolved)
    }

    /// Adds outcomes; those of `retried` devices (a replay's, `kind:token`) are all kept, so
    /// that each replaces the unresolved outcome its dead letter kept. The outcome of a device
    /// in `replacing` takes the place of the unresolved one kept for it (a broadcast page's
    /// checkpoint, or the record of a run resumed inside the page).
    mutating func add(_ recipients: [Delivery], keeping retried: Set<String> = [], replacing: Set<String> = []) {
        if !replacing.isEmpty {
            let replaced = Set(recipients.lazy.map(\.address).filter { replacing.contains($0) })
            if !replaced.isEmpty {
                let before = kept.count
                kept.removeAll { $0.isUnresolved && replaced.contains($0.address) }
                unresolved -= before - kept.count
            }
        }
        for recipient in recipients {
            if !retried.isEmpty, retried.contains(recipient.address) {
                kept.append(recipient)
                if recipient.isUnresolved { unresolved += 1 }
            } else if recipient.isUnresolved {
                unresolved += 1
                if unresolved <= Self.unresolvedKeptLimit { kept.append(recipient) } else { omitted += 1 }
            } else if kept.count < Self.keptLimit {
                kept.append(recipient)
            } else {
                omitted += 1
            }
        }
    }
}

extension EventProcessor {
    /// What the store keeps of a finished event; nil for a drop of an event nobody posted (a
    /// poll that found nothing new is no notification, and there would be one per check).
    /// - Parameter unposted: a record even of a drop nobody posted (its followers follow it).
    func eventRecord(_ finished: Finished, now: Double? = nil, unposted: Bool = false) -> EventRecord? {
        let now = now ?? clock.now
        let event = finished.event
        let report = finished.report
        var recipients = finished.recipients.kept
        var omitted = finished.recipients.omitted
        if let earlier = event.replayOf {
            // Bounded again: a broadcast replayed again and again keeps what one run keeps.
            var merged = RecipientList()
            merged.add(EventRecord.merging(earlier.recipients, recipients))
            recipients = merged.kept
            omitted += merged.omitted + earlier.omittedRecipients
        }
        let progress = finished.recipients.progress
        let state: EventRecord.State
        switch report.status {
        case .filtered, .noRecipients:
            guard unposted || event.caller != nil || event.replayOf != nil else { return nil }
            state = .dropped
        case .scheduled, .deferred, .batched, .throttled, .capped:
            guard unposted || event.caller != nil || event.replayOf != nil else { return nil }
            // Named alike in both.
            state = EventRecord.State(rawValue: report.status.rawValue) ?? .dropped
        case .failed where recipients.isEmpty || progress?.reachedAll == false:
            // A filter, the renderer or a plugin failed, or a broadcast stopped before its
            // last page (its recipients do not tell of the users it never reached): worth a
            // replay once fixed.
            state = .deadLetter
        default:
            state = EventRecord.state(of: recipients)
        }
        var record = self.record(of: event, state, recipients: recipients, omitted: omitted, at: now, broadcast: progress)
        record.stage = report.stage
        record.code = report.code
        record.reason = state == .delivered ? nil : report.reason
        record.heldUntil = report.heldUntil
        if state == .deadLetter {
            // Stopped at the drain timeout: its source keeps it (a queue, a watermark, a file)
            // and sends it again; a dead letter too would send it twice.
            guard !Task.isCancelled else {
                record.state = .processing
                return record
            }
            record.input = EventRecord.Input(time: event.time.timeIntervalSince1970, body: event.receivedBody ?? event.body, audience: event.audience)
        }
        return record
    }

    /// The finished event's record and, once its outcome is final, those of the events it
    /// carried (`Event.carries`): each in the carrier's state (a dead letter's as failed: a
    /// replay sends the carrier, not them), without its recipients, which the carrier's
    /// record lists. Another caller's carrier is not named.
    func eventRecords(_ finished: Finished, now: Double? = nil) -> [EventRecord] {
        let own = eventRecord(finished, now: now)
        guard !finished.event.carries.isEmpty else { return own.map { [$0] } ?? [] }
        // A carrier nobody posted (a poll's) keeps no record, but its followers get theirs.
        guard let record = own ?? eventRecord(finished, now: now, unposted: true), record.state.isFinal else {
            return own.map { [$0] } ?? []
        }
        return (own.map { [$0] } ?? [])
            + finished.event.carries.compactMap { carried in
                guard let caller = carried.caller else { return nil }
                var follower = record
                follower.eventID = carried.id
                follower.caller = caller
                follower.state = record.state == .deadLetter ? .failed : record.state
                follower.recipients = []
                follower.omittedRecipients = 0
                follower.input = nil
                follower.broadcast = nil
                // Nothing of the carrier's own that another caller should read.
                follower.traceID = nil
                follower.heldUntil = nil
                follower.code = "digest"
                let carrier = caller == record.caller ? "event \(record.eventID)" : "another event"
                follower.reason =
                    "went in the digest \(carrier) carried (\(record.state.rawValue))"
                    + (record.reason.map { ": \($0)" } ?? "")
                return follower
            }
    }

    /// `event`'s record in `state`, with what every record of it carries.
    func record(
        of event: Event,
        _ state: EventRecord.State,
        recipients: [Delivery],
        omitted: Int = 0,
        at now: Double,
        broadcast: BroadcastProgress? = nil
    ) -> EventRecord {
        EventRecord(
            pipeline: definition.name,
            eventID: event.id,
            state: state,
            source: event.source,
            caller: event.caller,
            user: event.user,
            recipients: recipients,
            omittedRecipients: omitted,
            traceID: event.trace?.traceID,
            acceptedAt: event.replayOf?.acceptedAt ?? event.time.timeIntervalSince1970,
            updatedAt: now,
            broadcast: broadcast
        )
    }

    /// Events whose first attempts are made and whose retries begin: their status says so.
    /// Told on a best-effort basis: the final record follows in any case.
    func recordProcessing(_ deliverings: [Delivering]) async {
        let now = clock.now
        let records = deliverings.map { record(of: $0.event, .processing, recipients: deliveries(of: $0, at: now), at: now) }
        try? await pipelineStore.recordOutcome(deliveries: [], state: [], events: records)
    }

    /// A replay's notifications: only to the devices its dead letter left unresolved. And none
    /// to a device that got the event's items already (`DeliveredDevices`), while another
    /// device of the user was still failing.
    func replayed(_ notifications: [RenderedNotification], of event: Event) -> [RenderedNotification] {
        var notifications = notifications
        let delivered = event.commitOnDelivery.alreadyDelivered
        if !delivered.isEmpty {
            notifications.removeAll { delivered.contains(DeliveredDevices.address(kind: $0.token.kind, token: $0.token.value)) }
        }
        guard let addresses = event.replayOf?.replayAddresses else { return notifications }
        return notifications.filter { addresses.contains($0.token.kind + ":" + $0.token.value) }
    }

    /// What an event delivered to some of its devices only records of its watermarks kept per
    /// device: the devices that have the items now, beside each watermark, which stays where it
    /// was until the others get them too. Nothing for an event fully delivered (its watermarks
    /// move: `outcome.state`) or for a broadcast's page.
    func deviceProgress(of outcome: Outcome) -> [StateWrite] {
        let event = outcome.delivering.event
        guard outcome.state.isEmpty, event.user != nil, event.commitOnDelivery.contains(where: { $0.perDevice != nil }) else { return [] }
        var delivered: Set<String> = []
        for (notification, delivery) in zip(outcome.delivering.notifications, outcome.deliveries) where delivery.outcome == .delivered {
            delivered.insert(DeliveredDevices.address(kind: notification.token.kind, token: notification.token.value))
        }
        guard !delivered.isEmpty else { return [] }
        return event.commitOnDelivery.compactMap { write in
            guard let before = write.perDevice, let upTo = write.value.doubleValue else { return nil }
            return StateWrite(
                stage: write.stage,
                key: DeliveredDevices.key(of: write.key),
                value: DeliveredDevices(upTo: upTo, devices: before.union(delivered)).json
            )
        }
    }
}

extension EventProcessor {
    /// What events' outcomes become when the store refuses them (`StoreDataError`): written
    /// again event by event, so that only the events whose data it refuses are concerned; each
    /// of those is a dead letter with the store's reason, without the deliveries, history and
    /// watermarks that were refused. Retried for ever instead, the outcome would hold its event
    /// in the queue and its worker blocked, and every restart would send it again. A broadcast's
    /// letter keeps its cursor (`progress`) in step with the progress it shows.
    func recordRefused(_ outcomes: [Outcome], events: [EventRecord], progress: [WorkItem], because refusal: StoreDataError) async {
        var seen: Set<String> = []
        let ids = (outcomes.map(\.delivering.event.id) + events.map(\.eventID)).filter { seen.insert($0).inserted }
        if ids.count > 1 {
            for id in ids {
                await record(
                    outcomes.filter { $0.delivering.event.id == id },
                    events: events.filter { $0.eventID == id },
                    progress: progress.filter { $0.key == id }
                )
            }
            return
        }
        let event = outcomes.first?.delivering.event
        guard let refused = events.last else {
            // A broadcast's page: the event's own record follows when it ends.
            logger.error("the store refused the deliveries of a page: \(refusal)", metadata: event.map { Self.metadata($0) } ?? [:])
            return
        }
        var letter = refused
        letter.state = .deadLetter
        letter.code = "store_refused"
        letter.reason = refusal.description
        if letter.input == nil, let event {
            letter.input = EventRecord.Input(time: event.time.timeIntervalSince1970, body: event.receivedBody ?? event.body)
        }
        // Refused again (the record's own data): the letter with nothing but the reason.
        let bare = EventRecord(
            pipeline: letter.pipeline,
            eventID: letter.eventID,
            state: .deadLetter,
            source: letter.source,
            code: letter.code,
            reason: letter.reason,
            acceptedAt: letter.acceptedAt,
            updatedAt: letter.updatedAt
        )
        for (candidate, cursors) in [(letter, progress), (bare, [])] {
            let webhooks = webhookOutcomes(of: [candidate], at: candidate.updatedAt)
            do {
                try await retrying(while: { _ in true }, failed: { _, _ in }) {
                    try await pipelineStore.recordOutcome(
                        deliveries: [],
                        state: [],
                        events: [candidate],
                        webhooks: webhooks,
                        finishing: [],
                        progress: cursors
                    )
                }
                if !webhooks.isEmpty { onWebhookOutcomes?() }
                logger.error(
                    "the store refused the outcome of event \(letter.eventID), now a dead letter: \(refusal)",
                    metadata: event.map { Self.metadata($0) } ?? [:]
                )
                return
            } catch is StoreDataError {
                continue
            } catch {
                break
            }
        }
        logger.error(
            "the store refused the outcome of event \(letter.eventID), and its dead letter: \(refusal)",
            metadata: event.map { Self.metadata($0) } ?? [:]
        )
    }
}
