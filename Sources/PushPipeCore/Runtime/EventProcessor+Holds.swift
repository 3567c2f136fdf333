import Foundation

extension EventProcessor {
    /// Keeps an event a filter held (`EventHold`) in the store, due at the hold's instant on the
    /// store's clock and held by nobody: whichever daemon of the group claims it then sends it
    /// through the pipeline again (`QueuedEventIntake.heldKey`). Its key counts its holds, so an
    /// event that comes back and is held again waits under a new key, while the same decision
    /// made twice (its source sent it again after a kill) is stored once.
    func keep(_ event: Event, _ hold: EventHold, stage: String, withdrawing: Bool = true) async -> EventReport {
        var queued = heldCopy(of: event, hold)
        queued.replacing = event.queueItem
        do {
            // What it replaces goes first: killed in between, its source sends it again, and
            // it is stored then; the other way round, both could be sent.
            if withdrawing, let replaceKey = hold.replaceKey { try await withdrawReplaced(replaceKey, by: event) }
            try await waitingForTheStore(event) { try await store.enqueue(queued) }
        } catch {
            return failed(event, "\(stage): the held event could not be stored: \(error)", stage: stage)
        }
        var report = heldReport(event, hold, stage: stage)
        // Its item went with the copy's commit: removed again, it could be the copy (a hold
        // again in the same second has the copy's key).
        report.leftQueue = queued.replacing != nil
        return report
    }

    /// Keeps a recurring send waiting for its next occurrence (`FilterResult.recur`), beside
    /// the item it came from, which the occurrence sent now completes. Its hold takes the place
    /// of the one it waited out and its key names the instant (`heldCopy`), so the same
    /// decision made again after a kill is stored once. Its record says when the next one goes
    /// (`recording`; else its report does). Nil once stored, else the failure.
    func keepForNext(_ event: Event, _ next: EventHold, stage: String, recording: Bool) async -> EventReport? {
        let queued = heldCopy(of: event, next)
        do {
            try await waitingForTheStore(event) { try await store.enqueue(queued) }
        } catch {
            return failed(event, "\(stage): the next occurrence could not be stored: \(error)", stage: stage)
        }
        if recording, let waiting = eventRecord(Finished(event: event, report: heldReport(event, next, stage: stage))) {
            await record([], events: [waiting])
        }
        return nil
    }

    /// Keeps each copy an event was split into (`FilterResult.split`), after withdrawing what
    /// the caller's earlier sends under the same replace key left waiting, and ends the event
    /// itself (dropped, code `split`). The copies are stored before the event's item is
    /// removed, each under a key its id names: killed in between, the event is split again and
    /// each copy still waiting is stored once.
    func keepCopies(_ copies: [(copy: Event, hold: EventHold)], of event: Event, stage: String) async -> EventReport {
        if let replaceKey = copies.first?.hold.replaceKey {
            do {
                try await withdrawReplaced(replaceKey, by: event)
            } catch {
                return failed(event, "\(stage): the sends it replaces could not be withdrawn: \(error)", stage: stage)
            }
        }
        var waiting: [EventRecord] = []
        for (copy, hold) in copies {
            var copy = copy
            copy.queueItem = nil
            let report = await keep(copy, hold, stage: stage, withdrawing: false)
            guard report.status != .failed else { return failed(event, report.reason ?? "a copy could not be stored", stage: stage) }
            if let record = eventRecord(Finished(event: copy, report: report)) { waiting.append(record) }
        }
        if !waiting.isEmpty { await record([], events: waiting) }
        // When each goes: what a dry run answers.
        let names =
            copies.prefix(5).map { "\($0.copy.id) at \(EventRecord.timestamp($0.hold.until.timeIntervalSince1970))" }.joined(separator: ", ")
            + (copies.count > 5 ? " and \(copies.count - 5) more" : "")
        return EventReport(
            eventID: event.id,
            pipeline: definition.name,
            user: event.user,
            status: .filtered,
            reason: "sent as \(copies.count) events, each for its part of the users: \(names)",
            stage: stage,
            code: "split"
        )
    }

    /// Withdraws the sends of `event`'s caller still waiting under `replaceKey` (but `event`'s
    /// own and its copies), and records them as replaced.
    private func withdrawReplaced(_ replaceKey: String, by event: Event) async throws {
        let replaced = try await waitingForTheStore(event) {
            try await pipelineStore.work.withdrawHeld(replaceKey: replaceKey, caller: event.caller, except: event.id)
        }
        let now = clock.now
        let records = replaced.map { $0.withdrawnRecord(code: "replaced", reason: "replaced by event \(event.id)", at: now) }
        if !records.isEmpty { await record([], events: records.filter { $0.caller != nil }) }
    }

    /// `event` as a held item, due at `hold`'s instant on the store's clock and held by nobody.
    /// A filter that held it before and holds it again (a sliding digest, a window at each
    /// occurrence, a series' next occurrence) puts the new hold in the place of its earlier
    /// one, so the holds stay bounded, under a key that names the instant; otherwise the hold
    /// is added and the key counts the holds.
    private func heldCopy(of event: Event, _ hold: EventHold) -> QueuedEvent {
        let until = hold.until.timeIntervalSince1970
        let again = event.hold(by: hold.holder).map { $0.until != until } ?? false
        let holds = (again ? event.holds.filter { $0.stage != hold.holder } : event.holds) + [PassedHold(stage: hold.holder, until: until)]
        var queued = QueuedEvent(
            pipeline: definition.name,
            source: QueuedEventIntake.heldKey,
            eventID: event.id,
            user: event.user,
            time: event.time.timeIntervalSince1970,
            body: event.receivedBody ?? event.body
        )
        queued.holds = holds
        queued.audience = event.audience
        queued.caller = event.caller
        queued.replayOf = event.replayOf
        queued.traceParent = event.traceParent
        queued.origin = event.source
        queued.key = QueuedEvent.heldKey(eventID: event.id, holds: holds.count, replaceKey: hold.replaceKey, until: again ? until : nil)
        queued.dueIn = .seconds(max(0, until - clock.now))
        return queued
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
