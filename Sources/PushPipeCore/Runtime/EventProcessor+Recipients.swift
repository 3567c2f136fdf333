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
        for event in events {
            let notifications: [RenderedNotification]
            do {
                notifications = try await rendered(event, context: rendererContext)
            } catch {
                finished.append(Finished(event: event, report: failed(event, "renderer (\(definition.renderer.type)): \(error)", stage: definition.renderer.id)))
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
    private func rendered(_ event: Event, context: StageContext) async throws -> [RenderedNotification] {
        let span = event.trace?.child(spanNames?.render ?? definition.renderer.id)
        span?.attributes["pushpipe.stage.type"] = definition.renderer.type
        defer { span?.end() }
        do {
            let notifications = replayed(try await waitingForTheStore(event) { try await definition.renderer.stage.render(event, context: context) },
                                         of: event)
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
        let now = Date().timeIntervalSince1970
        for delivering in deliverings {
            let deliveries = await settle(delivering)
            var tally = DeliveryTally()
            tally.add(deliveries)
            tallies.append(tally)
            // Watermarks move only when everything that could be delivered was.
            outcomes.append(Outcome(delivering: delivering, deliveries: deliveries,
                                    state: tally.status == .delivered ? delivering.event.commitOnDelivery : []))
            var recipients = RecipientList()
            recipients.add(self.recipients(of: delivering, at: now))
            finished.append(Finished(event: delivering.event, report: EventReport(eventID: delivering.event.id, pipeline: definition.name, user: nil,
                                                                                   status: tally.status, reason: tally.unresolvedReason),
                                     recipients: recipients, recorded: mode == .live))
        }
        if mode == .live { await record(outcomes, events: finished.compactMap { eventRecord($0, now: now) }) }
        // Reported (and logged) after the write, as a broadcast is: an event logged as delivered
        // has its outcome and watermarks in the store.
        for index in finished.indices { finished[index].report = finalReport(finished[index].event, tallies[index]) }
        return finished
    }

    /// An event for every user: one page of users at a time, so memory and tasks stay bounded
    /// however many tokens are registered. Its watermarks move once every page is delivered.
    func broadcast(_ event: Event, recipients: inout RecipientList) async -> EventReport {
        var tally = DeliveryTally()
        if mode == .live { await recordProcessing([Delivering(event: event, notifications: [])]) }
        var after: String?
        while true {
            let users: [String]
            do {
                users = try await waitingForTheStore(event) { try await store.users(pipeline: definition.name, after: after, limit: Self.usersPerPage) }
            } catch {
                return failed(event, "recipients: \(error)", stage: definition.renderer.id)
            }
            guard let first = users.first, let last = users.last else { break }
            // Stopped (the drain timeout) with users left: not delivered, so a source keeps
            // the event (a reply file stays) and it goes out again at the next start.
            guard !Task.isCancelled else {
                return failed(event, "stopped before every user was reached (\(tally.total) deliveries made)", stage: definition.renderer.id)
            }
            var context = rendererContext
            context.broadcastUsers = first...last
            let notifications: [RenderedNotification]
            do {
                notifications = try await rendered(event, context: context)
            } catch {
                return failed(event, "renderer (\(definition.renderer.type)): \(error)", stage: definition.renderer.id)
            }
            if !notifications.isEmpty {
                telemetry.rendered(event, notifications, stage: definition.renderer.id)
                var page = [Delivering(event: event, notifications: notifications)]
                await attemptFirst(&page, together: definition.delivery.fanout)
                await retry(&page)
                let deliveries = await settle(page[0])
                tally.add(deliveries)
                recipients.add(self.recipients(of: page[0], at: Date().timeIntervalSince1970))
                if mode == .live { await record([Outcome(delivering: page[0], deliveries: deliveries, state: [])]) }
            }
            after = last
            if users.count < Self.usersPerPage { break }
        }
        guard tally.total > 0 else { return noRecipients(event) }
        if mode == .live, tally.status == .delivered {
            do {
                try await store.setState(event.commitOnDelivery, pipeline: definition.name)
            } catch {
                logger.error("could not record the outcome: \(error)", metadata: Self.metadata(event))
            }
        }
        return finalReport(event, tally)
    }
}
