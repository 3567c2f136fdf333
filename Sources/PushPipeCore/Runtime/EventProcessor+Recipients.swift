import Foundation
import Tracing

extension EventProcessor {
    /// Users a broadcast renders at once: a page's notifications are all that is in memory.
    static var usersPerPage: Int { 1000 }

    /// Events for one user each: rendered one by one, their notifications sent together. The
    /// events whose deliveries settled at the first attempt are recorded (one write) and come
    /// back finished; the others come back for their retries, so a retry delays only its own event.
    func deliverToUsers(_ events: [Event]) async -> (finished: [Finished], retrying: [Delivering]) {
        var finished: [Finished] = []
        var deliverings: [Delivering] = []
        // The renderer looks up each event's recipients in turn: a store that caches them reads
        // the batch's users at once first. A hint, so a failure only leaves the lookups to do.
        if events.count > 1 { try? await rendererContext.registrations.warmTokens(users: events.compactMap(\.user)) }
        for event in events {
            let notifications: [RenderedNotification]
            do {
                notifications = try await rendered(event, context: rendererContext)
            } catch {
                finished.append(
                    Finished(event: event, report: failed(event, "renderer (\(definition.renderer.type)): \(error)", stage: definition.renderer.id))
                )
                continue
            }
            guard !notifications.isEmpty else {
                finished.append(Finished(event: event, report: noRecipients(event)))
                continue
            }
            telemetry.rendered(event, notifications, stage: definition.renderer.id)
            deliverings.append(Delivering(event: event, notifications: notifications))
        }
        guard !deliverings.isEmpty else { return (finished, []) }
        await attemptFirst(&deliverings, together: Int.max)
        var settled: [Delivering] = []
        var retrying: [Delivering] = []
        for delivering in deliverings {
            if delivering.needsRetry(within: definition.delivery.attempts) { retrying.append(delivering) } else { settled.append(delivering) }
        }
        return (finished + (await finishForUsers(settled)), retrying)
    }

    /// The event's notifications (a replay's: only those its dead letter left unresolved), in a
    /// span of their own when the event is traced.
    /// A broadcast's page (`audience`) keeps only the notifications its audience still wants.
    private func rendered(_ event: Event, context: StageContext, audience: BroadcastAudience? = nil) async throws -> [RenderedNotification] {
        let span = event.trace?.child(spanNames?.render ?? definition.renderer.id)
        span?.attributes["pushpipe.stage.type"] = definition.renderer.type
        defer { span?.end() }
        do {
            let all = try await waitingForTheStore(event) { try await definition.renderer.stage.render(event, context: context) }
            var notifications = audience.map { audience in all.filter { audience.includes($0.token) } } ?? replayed(all, of: event)
            // A broadcast for part of the users (one time zone's): the page's others are left out.
            if let part = event.audience, let users = context.broadcastUsers, !notifications.isEmpty {
                let settings = try await waitingForTheStore(event) { try await pipelineStore.settings(users: users, keys: part.keys) }
                notifications = notifications.filter { part.includes(settings[$0.token.user] ?? [:]) }
            }
            span?.attributes["pushpipe.notifications"] = notifications.count
            return notifications
        } catch {
            span?.recordError(error)
            span?.setStatus(SpanStatus(code: .error))
            throw error
        }
    }

    /// Applies the final outcomes and records them with each fully delivered event's watermarks
    /// in one write.
    func finishForUsers(_ deliverings: [Delivering]) async -> [Finished] {
        guard !deliverings.isEmpty else { return [] }
        var tallies: [DeliveryTally] = []
        var outcomes: [Outcome] = []
        var finished: [Finished] = []
        let now = clock.now
        for delivering in deliverings {
            let deliveries = await settle(delivering, at: now)
            var tally = DeliveryTally()
            tally.add(deliveries, of: delivering.notifications)
            tallies.append(tally)
            // Watermarks move only when everything that could be delivered was.
            outcomes.append(
                Outcome(
                    delivering: delivering,
                    deliveries: deliveries,
                    state: tally.status == .delivered ? delivering.event.commitOnDelivery : []
                )
            )
            var recipients = RecipientList()
            recipients.add(deliveries)
            finished.append(
                Finished(
                    event: delivering.event,
                    report: EventReport(
                        eventID: delivering.event.id,
                        pipeline: definition.name,
                        user: nil,
                        status: tally.status,
                        reason: tally.unresolvedReason
                    ),
                    recipients: recipients,
                    recorded: true
                )
            )
        }
        let finishing = Task.isCancelled ? [] : deliverings.compactMap(\.event.queueItem)
        let written = await record(outcomes, events: finished.flatMap { eventRecords($0, now: now) }, finishing: finishing)
        // Reported (and logged) after the write, as a broadcast is: an event logged as delivered
        // has its outcome and watermarks in the store.
        for index in finished.indices {
            finished[index].report = finalReport(finished[index].event, tallies[index])
            finished[index].report.leftQueue = written && !finishing.isEmpty && finished[index].event.queueItem != nil
        }
        return finished
    }

    /// An event for every user: one page of users at a time, so memory and tasks stay bounded
    /// however many tokens are registered. Each page's deliveries are recorded with the
    /// broadcast's progress (`BroadcastProgress`, its work item's cursor), and a page slow to
    /// settle as it goes (`deliver(page:)`), so a broadcast that stopped goes on where its cursor
    /// says: a kill sends again what went out since its last write, and nothing once the last
    /// page is recorded. One that ends early (a renderer or store error, too many unresolved recipients)
    /// is a dead letter with its progress, and its replay goes on from there; stopped at the
    /// drain timeout, it stays queued and resumes at the next start. Its watermarks move once
    /// every page is delivered.
    func broadcast(_ event: Event, recipients: inout RecipientList) async -> EventReport {
        var audience = BroadcastAudience(of: event)
        var progress = BroadcastProgress(reached: audience.reached, reachedAll: audience.reachedAll)
        do {
            if let (cursor, earlier) = try await waitingForTheStore(event, { try await broadcastProgress(of: event) }) {
                progress = cursor
                audience.reached = progress.reached
                audience.reachedAll = progress.reachedAll
                if let within = progress.pageReached { audience.resume(through: within, record: earlier) }
                recipients = RecipientList(resuming: earlier)
                let inside = progress.pageReached.map { "its page recorded up to user \($0), " } ?? ""
                logger.notice(
                    "broadcast resumes after user \(progress.after ?? "(none)") (\(inside)\(progress.deliveries) deliveries made)",
                    metadata: Self.metadata(event)
                )
            }
        } catch {
            return failed(event, "broadcast progress: \(error)", stage: definition.renderer.id)
        }
        await recordProgress(event, progress, recipients)
        let earlier = progress
        var tally = DeliveryTally()
        var after = progress.after ?? audience.start
        /// Ends the broadcast before its last page: its record keeps where.
        func stopped(_ reason: String) -> EventReport {
            recipients.progress = progress
            return failed(
                event,
                "\(reason); stopped after \(progress.after.map { "user \($0)" } ?? "no user") with \(progress.deliveries) deliveries made",
                stage: definition.renderer.id
            )
        }
        while true {
            let users: [String]
            do {
                users = try await waitingForTheStore(event) { try await pipelineStore.users(after: after, limit: Self.usersPerPage) }
            } catch {
                return stopped("recipients: \(error)")
            }
            guard let first = users.first, let last = users.last else { break }
            // Stopped (the drain timeout) with users left: not delivered, so a source keeps
            // the event (a reply file stays) and it goes on after this page at the next start.
            guard !Task.isCancelled else { return stopped("stopped before every user was reached") }
            if audience.mayInclude(first...last) {
                var context = rendererContext
                context.broadcastUsers = first...last
                let notifications: [RenderedNotification]
                do {
                    notifications = try await rendered(event, context: context, audience: audience)
                } catch {
                    return stopped("renderer (\(definition.renderer.type)): \(error)")
                }
                if !notifications.isEmpty {
                    telemetry.rendered(event, notifications, stage: definition.renderer.id)
                    let reachedAny = await deliver(
                        page: notifications,
                        of: event,
                        users: users,
                        audience: audience,
                        earlier: earlier,
                        tally: &tally,
                        recipients: &recipients,
                        progress: &progress
                    )
                    guard reachedAny else { return stopped("stopped before every user was reached") }
                } else {
                    progress.advance(past: last, earlier: earlier, tally)
                }
            } else {
                progress.advance(past: last, earlier: earlier, tally)
            }
            after = progress.after ?? last
            audience.leaveResumedPage()
            if users.count < Self.usersPerPage, after == last { break }
            guard !Task.isCancelled else { return stopped("stopped before every user was reached") }
            if recipients.unresolved >= RecipientList.unresolvedLimit {
                let reason = progress.unresolvedReason ?? DeliveryOutcome.retryAfter.rawValue
                return stopped("\(recipients.unresolved) recipients left unresolved (\(reason)); replay it once the provider answers")
            }
        }
        // Every page went out: kept in the record, a run that resumes it (killed before the
        // event left its queue) sends nothing again, and a replay retries only what is unresolved.
        progress.reachedAll = true
        recipients.progress = progress
        let total = earlier.deliveries + tally.total
        guard total > 0 else { return noRecipients(event) }
        let delivered = earlier.delivered + tally.delivered
        let unresolvedReason = earlier.unresolvedReason ?? tally.unresolvedReason
        let status: EventReport.Status = delivered == 0 ? .failed : unresolvedReason == nil ? .delivered : .partial
        if status == .delivered {
            do {
                try await pipelineStore.setState(event.commitOnDelivery)
            } catch {
                logger.error("could not record the outcome: \(error)", metadata: Self.metadata(event))
            }
        }
        var report = finalReport(event, tally)
        report.status = status
        report.reason = unresolvedReason
        report.omittedDeliveries = total > report.deliveries.count ? total - report.deliveries.count : nil
        return report
    }

    /// Where a broadcast this run had begun (killed, or stopped at the drain timeout) stands:
    /// its work item's cursor, and its record, which keeps what became of each recipient so
    /// far; nil to start afresh, when its record shows no progress (the event was held before
    /// it went out, or its id is used again). A broadcast an earlier version began has no cursor:
    /// it goes on where its record says. The dead letter a replay replays (marked accepted) is
    /// where the replay starts from (`BroadcastAudience`), not a run of its own.
    private func broadcastProgress(of event: Event) async throws -> (BroadcastProgress, EventRecord)? {
        let records = try await store.eventRecords(eventID: event.id, pipeline: definition.name).records
        guard let record = records.first, let shown = record.broadcast else { return nil }
        let progress = try await pipelineStore.work.broadcastProgress(eventID: event.id) ?? shown
        if let letter = event.replayOf, record.state != .processing, record.state == .accepted || progress == letter.broadcast { return nil }
        return (progress, record)
    }

    /// The record of a broadcast under way: its recipients so far and, for the status route,
    /// its progress.
    func progressRecord(_ event: Event, _ progress: BroadcastProgress, _ recipients: RecipientList) -> EventRecord {
        record(of: event, .processing, recipients: recipients.kept, omitted: recipients.omitted, at: clock.now, broadcast: progress)
    }

    /// The work item whose cursor is the broadcast's progress, saved with the record.
    func cursor(_ event: Event, _ progress: BroadcastProgress) -> WorkItem {
        .broadcast(eventID: event.id, progress, at: clock.now)
    }

    /// Marks the broadcast processing, with where it starts. Told on a best-effort basis, as
    /// `recordProcessing` is: each page's write carries the progress again.
    private func recordProgress(_ event: Event, _ progress: BroadcastProgress, _ recipients: RecipientList) async {
        await recordOnce([], events: [progressRecord(event, progress, recipients)], progress: [cursor(event, progress)])
    }
}

extension BroadcastProgress {
    /// Past a page whose last user is `last`: this run's counts are the earlier ones (a run
    /// resumed) and `tally`'s.
    mutating func advance(past last: String, earlier: BroadcastProgress, _ tally: DeliveryTally) {
        after = last
        if pageReached.map({ $0 <= last }) ?? false { pageReached = nil }
        if reached.map({ last > $0 }) ?? true { reached = last }
        count(earlier, tally)
    }

    /// Inside the page after `after`, up to `user` (a checkpoint while the rest of it is out);
    /// the counts are as `advance(past:)` makes them.
    mutating func advance(within user: String, earlier: BroadcastProgress, _ tally: DeliveryTally) {
        if pageReached.map({ user > $0 }) ?? true { pageReached = user }
        count(earlier, tally)
    }

    private mutating func count(_ earlier: BroadcastProgress, _ tally: DeliveryTally) {
        deliveries = earlier.deliveries + tally.total
        delivered = earlier.delivered + tally.delivered
        unresolvedReason = earlier.unresolvedReason ?? tally.unresolvedReason
    }
}
