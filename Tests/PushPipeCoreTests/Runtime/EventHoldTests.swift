import Foundation
import Logging
import PushPipeCore
import PushPipePostgres
import PushPipePostgresTesting
import PushPipeSQLite
import PushPipeStages
import PushPipeTesting
import Testing

/// An event a timing filter holds waits in the store, not in the process that held it: a
/// daemon started later (the first one killed, or another of the group) sends it once it is
/// due, never before, and once. On both stores.
@Suite struct EventHoldTests {
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    /// A scripted pipeline on a fresh store of `backend` (nil: PostgreSQL is not configured).
    static func withPipeline(
        _ backend: Backend,
        filters: String,
        _ body: (PipelineDefinition, ScriptedTransport, any Store) async throws -> Void
    )
        async throws
    {
        let directory = try TemporaryDirectory("hold")
        defer { directory.remove() }
        let store: any Store
        switch backend {
        case .sqlite: store = try SQLiteStore(path: directory.file("state.sqlite"))
        case .postgres:
            guard TestStores.postgresURL != nil else { return }
            store = try await PostgresStore(location: try await TestStores.freshPostgresDatabase(), logger: Logger(label: "test"))
        }
        let transport = ScriptedTransport()
        let definition = try await ScriptedPipeline.definition(
            """
            filters:
            \(filters)
            renderer: {type: json.template, token_kind: device, payload: {text: "{{text}}"}}
            """,
            in: directory,
            transport: transport
        )
        try await withCleanup({ try await body(definition, transport, store) }, cleanup: { try? await store.close() })
    }

    @Test(arguments: Backend.allCases)
    func aHeldEventIsSentOnceDueByADaemonStartedLater(_ backend: Backend) async throws {
        try await Self.withPipeline(backend, filters: "  - {type: timing.schedule, at_field: send_at}") { definition, transport, store in
            try await store.pipeline("scripted").register(
                DeviceToken(user: "ana", kind: "device", value: "tok-ana"),
                environment: nil,
                replace: false
            )
            let sendAt = Date().timeIntervalSince1970 + 2
            var event = Event(pipeline: "scripted", user: "ana", body: ["text": "hi", "send_at": .double(sendAt)])
            event.caller = "backend"
            // The process that held it ends before it is due.
            let report = await EventProcessor(definition: definition, store: store, logger: Logger(label: "scripted"), mode: .live).process(event)
            #expect(report.status == .scheduled)
            #expect(report.heldUntil == sendAt)
            #expect(report.code == "send_at")
            let waiting = try await store.eventRecords(eventID: event.id, pipeline: "scripted")
            #expect(waiting.records.first?.state == .scheduled)
            #expect(waiting.records.first?.heldUntil == sendAt)
            #expect(waiting.queued.count == 1, "kept in the store, due at its instant")
            #expect(transport.sends.isEmpty)

            let runner = PipelineRunner(
                definition: definition,
                store: store,
                logger: Logger(label: "scripted"),
                mode: .live,
                output: OutputSink { _ in }
            )
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await runner.run() }
                await transport.waitForSends(1)
                #expect(Date().timeIntervalSince1970 >= sendAt, "never before its instant")
                let record = try await eventually("the record says delivered") {
                    try await store.eventRecords(eventID: event.id, pipeline: "scripted").records.first.flatMap { $0.state == .delivered ? $0 : nil }
                }
                #expect(record.heldUntil == nil)
                try await eventually("the held item is gone") { try await store.eventRecords(eventID: event.id, pipeline: "scripted").queued.isEmpty }
                runner.stop()
                try await group.waitForAll()
            }
            #expect(transport.sends == ["tok-ana"], "sent once")
        }
    }

    /// The same decision made twice (the source sent the event again after a kill, before
    /// removing it from its queue) is stored once; an event held again after coming back waits
    /// under a new key, so its first item's removal does not take the second.
    @Test(arguments: Backend.allCases)
    func aHoldIsStoredOncePerDecision(_ backend: Backend) async throws {
        try await Self.withPipeline(backend, filters: "  - {type: timing.schedule, delay: 1h}") { definition, _, store in
            var event = Event(pipeline: "scripted", user: "ana", body: ["text": "hi"])
            event.caller = "backend"
            let processor = EventProcessor(definition: definition, store: store, logger: Logger(label: "scripted"), mode: .live)
            #expect(await processor.process(event).status == .scheduled)
            #expect(await processor.process(event).status == .scheduled)
            #expect(try await store.eventRecords(eventID: event.id, pipeline: "scripted").queued.count == 1)
            // Back from a wait and held again by another rule: a second item.
            event.holds = [PassedHold(stage: "filters[9]", until: 0)]
            #expect(await processor.process(event).status == .scheduled)
            let queued = try await store.eventRecords(eventID: event.id, pipeline: "scripted").queued
            #expect(queued.count == 2)
            #expect(queued.map(\.holds.count).sorted() == [1, 2])
        }
    }

    /// A filter that holds an event again (a window it came back to hours late) replaces its
    /// earlier hold rather than adding one: an event deferred day after day carries one.
    @Test(arguments: Backend.allCases)
    func aFilterHoldingAgainReplacesItsEarlierHold(_ backend: Backend) async throws {
        try await Self.withPipeline(backend, filters: "  - {type: timing.window, windows: [{start: \"08:00\", end: \"08:01\"}]}") {
            definition,
            _,
            store in
            let clock = ManualClock(now: try Date("2026-06-01T07:59:00Z", strategy: .iso8601).timeIntervalSince1970)
            let processor = EventProcessor(definition: definition, store: store, logger: Logger(label: "scripted"), mode: .live, clock: clock)
            var event = Event(id: "late", pipeline: "scripted", user: "ana", body: ["text": "hi"])
            event.caller = "backend"
            #expect(await processor.process(event).status == .deferred)
            for day in 1...3 {
                let waiting = try await store.eventRecords(eventID: "late", pipeline: "scripted").queued
                #expect(waiting.count == 1 && waiting.first?.holds.count == 1, "day \(day): \(waiting.map(\.key))")
                let item = try #require(waiting.first)
                // Back three hours after its opening (the daemons were down): deferred to the next day's.
                clock.advance(seconds: (item.holds.last?.until ?? 0) + 3 * 3600 - clock.now)
                #expect(await processor.process(item.event).status == .deferred)
            }
            let last = try await store.eventRecords(eventID: "late", pipeline: "scripted").queued
            #expect(last.count == 1 && last.first?.holds.count == 1, "\(last.map(\.key))")
        }
    }

    /// The held copy replaces the accepted item it came from in one transaction: a kill right
    /// after the hold leaves neither the event lost nor two copies to send.
    @Test(arguments: Backend.allCases)
    func aHoldReplacesTheAcceptedItemInOneStep(_ backend: Backend) async throws {
        try await Self.withPipeline(backend, filters: "  - {type: timing.schedule, delay: 1h}") { definition, _, store in
            let accepted = QueuedEventOutcomeTests.accepted
            try await store.enqueue(accepted)
            // The event as a source hands it on (no completion: the process "dies" after the hold).
            let event = accepted.event
            #expect(event.queueItem == Event.QueueItem(source: "http.event", key: accepted.key))
            let report = await EventProcessor(definition: definition, store: store, logger: Logger(label: "scripted"), mode: .live).process(event)
            // Removed by the held copy's own commit, not by a write after it.
            #expect(report.status == .scheduled && report.leftQueue, "\(report)")
            let queued = try await store.eventRecords(eventID: "e1", pipeline: "scripted").queued
            #expect(queued.map(\.source) == [QueuedEventIntake.heldKey], "only the held copy is left: \(queued.map(\.source))")
        }
    }

    /// A repeating send falls due: its occurrence goes under an id of its own, and the event
    /// waits again for the next, stored once even when the same occurrence is processed twice
    /// (a kill before its item was removed); its record says when the next one goes.
    @Test(arguments: Backend.allCases)
    func aRepeatingSendWaitsAgainOnceForEachOccurrence(_ backend: Backend) async throws {
        let filter = "  - {type: timing.schedule, local_time: \"09:00\", repeat: daily, time_zone: Europe/Berlin}"
        try await Self.withPipeline(backend, filters: filter) { definition, transport, store in
            try await store.pipeline("scripted").register(
                DeviceToken(user: "ana", kind: "device", value: "tok-ana"),
                environment: nil,
                replace: false
            )
            let clock = ManualClock(now: try Date("2026-06-01T12:00:00Z", strategy: .iso8601).timeIntervalSince1970)
            let processor = EventProcessor(definition: definition, store: store, logger: Logger(label: "scripted"), mode: .live, clock: clock)
            var event = Event(id: "pill", pipeline: "scripted", user: "ana", body: ["text": "take it"])
            event.caller = "backend"
            let tuesday = try Date("2026-06-02T07:00:00Z", strategy: .iso8601).timeIntervalSince1970
            #expect(await processor.process(event).heldUntil == tuesday)
            func waiting() async throws -> [QueuedEvent] {
                try await store.eventRecords(eventID: "pill", pipeline: "scripted").queued.sorted {
                    ($0.holds.last?.until ?? 0) < ($1.holds.last?.until ?? 0)
                }
            }
            let first = try #require(try await waiting().first)
            clock.advance(seconds: tuesday - clock.now)
            let occurrence = await processor.process(first.event)
            #expect(occurrence.eventID == "pill@2026-06-02" && occurrence.status == .delivered, "\(occurrence)")
            #expect(try await waiting().count == 1, "the item that fell due went with the occurrence's outcome, the next waits")
            let series = try #require(try await store.eventRecords(eventID: "pill", pipeline: "scripted").records.first)
            #expect(series.state == .scheduled && series.heldUntil == tuesday + 86_400, "\(series)")
            #expect(try await store.eventRecords(eventID: "pill@2026-06-02", pipeline: "scripted").records.first?.state == .delivered)
            // Killed before the occurrence's outcome was committed (its item still queued):
            // processed again, the next wait is not stored twice.
            var stillQueued = first
            stillQueued.dueIn = .zero
            try await store.enqueue(stillQueued)
            #expect(try await waiting().count == 2)
            _ = await processor.process(first.event)
            let queued = try await waiting()
            #expect(queued.count == 1, "only the next: \(queued.map(\.key))")
            #expect(queued.map { $0.holds.count } == [1], "the next wait takes the place of the last")
            // The next one, a day later.
            let next = try #require(queued.last)
            clock.advance(seconds: tuesday + 86_400 - clock.now)
            #expect(await processor.process(next.event).eventID == "pill@2026-06-03")
            #expect(try await waiting().last?.holds.last?.until == tuesday + 2 * 86_400)
            #expect(transport.sends.count >= 2 && transport.sends.allSatisfy { $0 == "tok-ana" })
        }
    }

    /// "09:00 local" for every user: one send per zone its users have, each at that zone's
    /// 09:00 and for that zone's users only (a device's zone first, an unknown zone the stage's).
    @Test(arguments: Backend.allCases)
    func aBroadcastAtALocalTimeGoesToEachZoneAtItsHour(_ backend: Backend) async throws {
        let filter = "  - {type: timing.schedule, local_time: \"09:00\", time_zone: America/New_York}"
        try await Self.withPipeline(backend, filters: filter) { definition, transport, store in
            let pipeline = store.pipeline("scripted")
            for user in ["ana", "bob", "cy", "dee"] {
                try await pipeline.register(DeviceToken(user: user, kind: "device", value: "tok-\(user)"), environment: nil, replace: false)
            }
            try await pipeline.setSettings(["time_zone": "Asia/Tokyo"], user: "ana")
            try await pipeline.setSettings(["time_zone": "Asia/Tokyo", "device_time_zone": "Europe/Berlin"], user: "bob")
            try await pipeline.setSettings(["time_zone": "Mars/Base"], user: "dee")
            let clock = ManualClock(now: try Date("2026-06-01T12:00:00Z", strategy: .iso8601).timeIntervalSince1970)
            let processor = EventProcessor(definition: definition, store: store, logger: Logger(label: "scripted"), mode: .live, clock: clock)
            var event = Event(id: "news", pipeline: "scripted", user: nil, body: ["text": "good morning"])
            event.caller = "backend"
            let split = await processor.process(event)
            #expect(split.status == .filtered && split.code == "split", "\(split)")
            let tokyo = EventRecord.timestamp(try Date("2026-06-02T00:00:00Z", strategy: .iso8601).timeIntervalSince1970)
            #expect(split.reason?.contains("news@Asia/Tokyo at \(tokyo)") == true, "when each goes: \(split.reason ?? "")")
            // A dry run says the same and keeps nothing.
            let dry = await EventProcessor(definition: definition, store: store, logger: Logger(label: "scripted"), mode: .dryRun, clock: clock)
                .process(Event(id: "dry", pipeline: "scripted", user: nil, body: ["text": "hi"]))
            #expect(dry.code == "split" && dry.reason?.contains("dry@Europe/Berlin at") == true, "\(dry)")
            #expect(try await store.eventRecords(eventID: "dry@Europe/Berlin", pipeline: "scripted").queued.isEmpty)
            #expect(try await store.eventRecords(eventID: "news", pipeline: "scripted").records.first?.state == .dropped)
            var sent: [String] = []
            for (zone, at, users) in [
                ("America/New_York", "2026-06-01T13:00:00Z", ["tok-cy", "tok-dee"]), ("Europe/Berlin", "2026-06-02T07:00:00Z", ["tok-bob"]),
                ("Asia/Tokyo", "2026-06-02T00:00:00Z", ["tok-ana"]),
            ] {
                let found = try await store.eventRecords(eventID: "news@\(zone)", pipeline: "scripted")
                #expect(found.records.first?.state == .scheduled, "\(zone)")
                let copy = try #require(found.queued.first, "\(zone) waits")
                let due = try Date(at, strategy: .iso8601).timeIntervalSince1970
                #expect(copy.holds.last?.until == due, "\(zone) at its 09:00")
                clock.advance(seconds: max(0, due - clock.now))
                let report = await processor.process(copy.event)
                #expect(report.status == .delivered, "\(zone): \(report)")
                let now = transport.sends.filter { !sent.contains($0) }
                #expect(now.sorted() == users, "\(zone) reached only its users")
                sent = transport.sends
            }
        }
    }

    /// A dry run says when it would be sent, and keeps nothing.
    @Test func aDryRunSaysWhenAndKeepsNothing() async throws {
        try await Self.withPipeline(.sqlite, filters: "  - {type: timing.schedule, delay: 90m}") { definition, transport, store in
            var event = Event(pipeline: "scripted", user: "ana", body: ["text": "hi"])
            event.caller = "backend"
            let before = Date().timeIntervalSince1970
            let report = await EventProcessor(definition: definition, store: store, logger: Logger(label: "scripted"), mode: .dryRun).process(event)
            #expect(report.status == .scheduled)
            let until = try #require(report.heldUntil)
            #expect(until >= before + 5400 && until <= Date().timeIntervalSince1970 + 5400)
            #expect(report.reason?.contains("scheduled for") == true)
            #expect(try await store.eventRecords(eventID: event.id, pipeline: "scripted").queued.isEmpty)
            #expect(transport.sends.isEmpty)
        }
    }
}
