import Logging

/// The events a pipeline keeps in the store under one source key: claimed when nobody works
/// on them (an earlier run, a daemon that died, or this one let go of them), their leases
/// renewed while they are processed here, and removed once finished. An `http.event` source
/// takes in what it accepted this way; every pipeline takes in its dead letters' replays.
public struct QueuedEventIntake: Sendable {
    /// How long a claimed event stays with this daemon without a renewal.
    public let lease: Duration
    public let leases = QueuedEventLeases()
    /// How often it looks for events when none was waiting.
    public let idle: Duration

    /// The key dead letters' replays wait under, in every pipeline: no source has it.
    public static let replayKey = "dead-letter-replay"
    /// The lease of a replay: a daemon that dies sending it leaves it to another that soon.
    public static let replayLease: Duration = .seconds(15)
    /// The key held events (`EventHold`) wait under, in every pipeline, due at their instant.
    public static let heldKey = "held"
    /// How often a pipeline looks for held events that fell due: the most a held event's
    /// instant is missed by, beside the time to claim and send it.
    public static let heldPoll: Duration = .seconds(1)

    public init(lease: Duration, idle: Duration? = nil) {
        self.lease = lease
        self.idle = idle ?? lease / 3
    }

    /// Until cancelled: takes over what nobody works on, never more than the pipeline has room
    /// to start (the leases of events waiting for room would lapse).
    public func claimWhileRunning(into sink: any EventSink, context: StageContext, announcing what: String) async {
        while !Task.isCancelled {
            var more = 0
            do {
                let room = min(sink.room, 1000)
                if room > 0, leases.mayClaim(lease: lease) {
                    let claimed = try await claim(upTo: room, into: sink, context: context, announcing: what)
                    if claimed == room { more = room }
                }
            } catch is CancellationError, is PipelineStopping {
                return
            } catch {
                if leases.failed(error) { context.logger.error("queued events: claims failed (logged again when the store answers): \(error)") }
            }
            do {
                if more > 0 {
                    // More may be waiting: look again once half the room this claim filled is
                    // free, as events finish, so the rate follows the pipeline's and not a
                    // pause's; or after 100 ms.
                    try await waitForRoom(max(1, more / 2), in: sink, clock: context.clock)
                } else {
                    try await context.clock.sleep(for: idle)
                }
            } catch {
                return
            }
        }
    }

    /// Returns once `sink` has `wanted` room, or after 100 ms.
    private func waitForRoom(_ wanted: Int, in sink: any EventSink, clock: any DaemonClock) async throws {
        let until = clock.elapsed + .milliseconds(100)
        while sink.room < wanted, clock.elapsed < until { try await clock.sleep(for: .milliseconds(2)) }
    }

    /// Claims at most `limit` events and submits them; returns how many it claimed. What could
    /// not be submitted (the pipeline is stopping) is let go of at once.
    private func claim(upTo limit: Int, into sink: any EventSink, context: StageContext, announcing what: String) async throws -> Int {
        let returned = try await context.queuedEvents.claimQueuedEvents(source: context.key, lease: lease, limit: limit)
        // What this process holds already is in flight here: the claim only renewed its lease.
        let taken = leases.holdUnlessHeld(returned.map(\.key))
        let claimed = zip(returned, taken).filter(\.1).map(\.0)
        if claimed.count < returned.count {
            context.logger.debug("queued events: \(returned.count - claimed.count) claimed are in flight here already; not started again")
        }
        guard !claimed.isEmpty else { return returned.count }
        context.logger.notice("sending \(claimed.count) \(what)")
        context.count(.eventsRecovered, by: claimed.count)
        for (index, queued) in claimed.enumerated() {
            var event = queued.event
            event.onComplete = completion(of: queued, store: context.queuedEvents, logger: context.logger)
            do {
                try await sink.submit(event)
            } catch {
                await leases.letGo(claimed[index...].map(\.key), store: context.queuedEvents, source: context.key)
                throw error
            }
        }
        return returned.count
    }

    /// Until the pipeline drained: every third of the lease, renews the leases of the events
    /// held here and retries the removals that failed.
    public func renewWhileRunning(context: StageContext) async {
        while !Task.isCancelled {
            do {
                try await context.queuedEvents.renewLeases(source: context.key, keys: leases.heldKeys, lease: lease)
                for key in leases.finished {
                    try await context.queuedEvents.dequeue(source: context.key, key: key)
                    leases.forget(key)
                }
                if leases.answered() { context.logger.notice("queued events: leases renewed again") }
            } catch is CancellationError {
                return
            } catch {
                if leases.failed(error) {
                    context.logger.error("queued events: leases not renewed, the store failed (logged again when it answers): \(error)")
                }
            }
            do { try await context.clock.sleep(for: lease / 3) } catch { return }
        }
    }

    /// Removes the event from the queue once processed, whatever the outcome (it is recorded),
    /// unless the commit of its outcome removed it already (`EventReport.leftQueue`, the usual
    /// case). Cancelled (a drain timeout): let go of, so it is claimed again at once. A removal that
    /// fails keeps the event held, renewed and retried, rather than sent again by another daemon.
    public func completion(of queued: QueuedEvent, store: any PipelineStore, logger: Logger) -> @Sendable (EventReport) async -> Void {
        let (eventID, key, source) = (queued.eventID, queued.key, queued.source)
        return { [leases] report in
            guard !report.leftQueue else {
                leases.forget(key)
                return logger.debug("event \(eventID) processed; removed from the queue with its outcome")
            }
            guard !Task.isCancelled else { return await leases.letGo([key], store: store, source: source) }
            do {
                try await store.dequeue(source: source, key: key)
                leases.forget(key)
                logger.debug("event \(eventID) processed; removed from the queue")
            } catch {
                leases.finishLater(key)
                // An unavailable store logged that itself, once.
                let level: Logger.Level = StoreAvailability.meansAway(error) ? .debug : .warning
                logger.log(level: level, "event \(eventID) processed but not yet removed from the queue (retried with the lease renewals): \(error)")
            }
        }
    }
}
