import Foundation

extension EventProcessor {
    /// Keeps an event a filter held (`EventHold`) in the store, due at the hold's instant on the
    /// store's clock and held by nobody: whichever daemon of the group claims it then sends it
    /// through the pipeline again (`QueuedEventIntake.heldKey`). Its key counts its holds, so an
    /// event that comes back and is held again waits under a new key, while the same decision
    /// made twice (its source sent it again after a kill) is stored once.
    func keep(_ event: Event, _ hold: EventHold, stage: String) async -> EventReport {
        var queued = QueuedEvent(
            pipeline: definition.name,
            source: QueuedEventIntake.heldKey,
            eventID: event.id,
            user: event.user,
            time: event.time.timeIntervalSince1970,
            body: event.receivedBody ?? event.body
        )
        queued.holds = event.holds + [PassedHold(stage: hold.holder, until: hold.until.timeIntervalSince1970)]
        queued.key = QueuedEvent.heldKey(eventID: event.id, holds: queued.holds.count, replaceKey: hold.replaceKey)
        queued.caller = event.caller
        queued.replayOf = event.replayOf
        queued.traceParent = event.traceParent
        queued.origin = event.source
        queued.dueIn = .seconds(max(0, hold.until.timeIntervalSince1970 - clock.now))
        queued.replacing = event.queueItem
        do {
            // What it replaces goes first: killed in between, its source sends it again, and
            // it is stored then; the other way round, both could be sent.
            if let replaceKey = hold.replaceKey {
                let replaced = try await waitingForTheStore(event) {
                    try await pipelineStore.work.withdrawHeld(replaceKey: replaceKey, caller: event.caller, except: event.id)
                }
                let now = clock.now
                let records = replaced.map { $0.withdrawnRecord(code: "replaced", reason: "replaced by event \(event.id)", at: now) }
                if !records.isEmpty { await record([], events: records.filter { $0.caller != nil }) }
            }
            try await waitingForTheStore(event) { try await store.enqueue(queued) }
        } catch {
            return failed(event, "\(stage): the held event could not be stored: \(error)", stage: stage)
        }
        return heldReport(event, hold, stage: stage)
    }

    /// The report of an event `hold` keeps waiting (its status the hold's kind), with its instant.
    func heldReport(_ event: Event, _ hold: EventHold, stage: String) -> EventReport {
        var report = EventReport(
            eventID: event.id,
            pipeline: definition.name,
            user: event.user,
            status: EventReport.Status(rawValue: hold.kind.rawValue) ?? .scheduled,
            reason: hold.reason,
            stage: stage,
            code: hold.code
        )
        report.heldUntil = hold.until.timeIntervalSince1970
        report.holder = hold.holder
        return report
    }
}
