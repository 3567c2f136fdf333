extension EventProcessor {
    /// How long what settled of a broadcast page may stay unrecorded while the rest of the page
    /// is out: about what a kill there sends again.
    static var checkpointInterval: Duration { .seconds(5) }

    /// Sends a broadcast's page of `users` and records its deliveries with the progress past it
    /// (the cursor of its work item, `WorkQueue+Broadcasts`), in one transaction. A page slow to
    /// settle (late answers, retries) is recorded as it goes too: before its retries wait and
    /// every `checkpointInterval`, what it reached and what was accepted, with the recipients
    /// left to retry, so that a daemon that takes the event over after a kill sends again only
    /// what went out since, never a notification the record says was accepted. `users` are the page's, in the store's order (never none). Returns false
    /// when stopped (the drain timeout) before it reached anyone.
    func deliver(
        page notifications: [RenderedNotification],
        of event: Event,
        users: [String],
        audience: BroadcastAudience,
        earlier: BroadcastProgress,
        tally: inout DeliveryTally,
        recipients: inout RecipientList,
        progress: inout BroadcastProgress
    ) async -> Bool {
        var page = [Delivering(event: event, notifications: notifications)]
        // Devices whose unresolved outcome `recipients` keeps for this page (a checkpoint's, or
        // the record's of the run it resumes): their next outcome replaces it.
        var listed = audience.resumedDevices
        // Users whose history of the event a checkpoint wrote.
        var historied: Set<String> = []
        var lastWrite = clock.elapsed
        /// Records what of the page settled, which of its recipients wait for a retry and how far
        /// it reached, `now` or once `checkpointInterval` passed since the last. Tried once: the
        /// page's own write follows in any case, so an absent store holds up no sending.
        func checkpoint(_ page: inout [Delivering], now: Bool) async {
            guard !Task.isCancelled, now || clock.elapsed - lastWrite >= Self.checkpointInterval,
                let within = page[0].lastUserAttempted(listed: users)
            else { return }
            lastWrite = clock.elapsed
            var settled: [Int] = []
            var waiting: [Int] = []
            for (index, (notification, attempt)) in zip(page[0].notifications, page[0].attempts).enumerated()
            where !attempt.recorded && !attempt.notSentYet && notification.token.user <= within {
                // A retry's outcome, a refusal too, is the page's own write's: until then the
                // record keeps it unresolved, for a run that resumes the page to send again.
                if attempt.outcome.outcome.isUnresolved { waiting.append(index) } else { settled.append(index) }
            }
            let at = clock.now
            let pending = self.deliveries(of: page[0].part(waiting), at: at)
            let pendingDevices = Set(pending.map(\.address))
            guard !settled.isEmpty || !pendingDevices.isSubset(of: listed) || progress.pageReached.map({ within > $0 }) ?? true else { return }
            let done = page[0].part(settled)
            let deliveries = self.deliveries(of: done, at: at)
            var counted = tally
            counted.add(deliveries, of: done.notifications)
            var kept = recipients
            kept.add(deliveries, keeping: audience.retrying, replacing: listed)
            kept.add(pending, keeping: pendingDevices, replacing: listed)
            var reaching = progress
            reaching.advance(within: within, earlier: earlier, counted)
            // What settled and the progress inside the page, in one transaction.
            let written = await recordOnce(
                [Outcome(delivering: done, deliveries: deliveries, state: [], historyWritten: historied)],
                events: [progressRecord(event, reaching, kept)],
                progress: [cursor(event, reaching)]
            )
            guard written else { return }
            for index in settled { page[0].attempts[index].recorded = true }
            _ = await settle(done, at: at)
            for (notification, delivery) in zip(done.notifications, deliveries) where delivery.outcome == .delivered {
                historied.insert(notification.token.user)
            }
            tally = counted
            recipients = kept
            progress = reaching
            listed.formUnion(pendingDevices)
        }
        await attemptFirst(&page, together: definition.delivery.fanout) { await checkpoint(&$0, now: false) }
        if page[0].needsRetry(within: definition.delivery.attempts) {
            await checkpoint(&page, now: true)
            await retry(&page) { await checkpoint(&$0, now: false) }
        }
        // Stopped partway through the page: it counts up to the last user it reached.
        var reached = users.last!
        if Task.isCancelled {
            guard let user = page[0].keepUsersReached(in: users) else { return false }
            reached = user
        }
        let rest = page[0].unrecorded
        let deliveries = await settle(rest, at: clock.now)
        tally.add(deliveries, of: rest.notifications)
        recipients.add(deliveries, keeping: audience.retrying, replacing: listed)
        progress.advance(past: reached, earlier: earlier, tally)
        // The page's deliveries no checkpoint recorded and the progress past it, in one transaction.
        await record(
            [Outcome(delivering: rest, deliveries: deliveries, state: [], historyWritten: historied)],
            events: [progressRecord(event, progress, recipients)],
            progress: [cursor(event, progress)]
        )
        return true
    }
}
