import Foundation
import Logging
import PushPipeTesting
import Synchronization
import Testing

@testable import PushPipeCore

/// A worker works on many events at once under load: their notifications go out in
/// one batch send and are recorded in one write; a retry still delays only its own event.
@Suite struct BatchProcessingTests {
    static let renderer = """
        renderer: {type: json.template, payload: {text: "{{text}}"}}
        """

    func token(_ index: Int) -> String { String(format: "%032x", index + 1) }

    @Test func aBatchsNotificationsAreSentTogetherAndEachEventGetsItsOwnReport() async throws {
        try await ScriptedPipeline.with(Self.renderer) { pipeline in
            for index in 0..<3 { try await pipeline.register("user\(index)", token(index)) }
            pipeline.transport.script(token(1), [.dropToken(reason: ProviderReason(code: "Unregistered", "Unregistered"), since: nil)])
            let events = (0..<3).map { pipeline.event(user: "user\($0)", ["text": .string("hi \($0)")]) }
            let started = await pipeline.processor.start(events)
            #expect(pipeline.transport.batches == [3], "one send for the batch, not one per event")
            #expect(started.followUps.isEmpty)
            let byEvent = Dictionary(uniqueKeysWithValues: started.reports.map { ($0.eventID, $0) })
            #expect(byEvent[events[0].id]?.status == .delivered)
            #expect(byEvent[events[1].id]?.deliveries.first?.outcome == .dropToken)
            #expect(byEvent[events[2].id]?.status == .delivered)
            #expect(
                try await pipeline.store.pipeline(pipeline.definition.name).tokens(user: "user1", kind: "device").isEmpty,
                "the dead token is removed"
            )
            for index in [0, 2] {
                let history = try await pipeline.store.pipeline(pipeline.definition.name).history(user: "user\(index)", limit: 5, before: nil)
                #expect(history.map(\.eventID) == [events[index].id])
            }
        }
    }

    /// The renderer looks up each event's recipients in turn: the batch's users are read at
    /// once before it (`warmTokens`), a user without a registration too.
    @Test func aBatchsUsersAreReadAheadOfTheRenderer() async throws {
        try await ScriptedPipeline.with(Self.renderer) { pipeline in
            for index in 0..<3 { try await pipeline.register("user\(index)", token(index)) }
            let store = pipeline.store.pipeline(pipeline.definition.name)
            let cache = try #require((store as? any GroupCommittedPipelineStore)?.tokenCache)
            let users = ["user0", "user1", "user2", "nobody"]
            #expect(cache.unwarmed(users, pipeline: pipeline.definition.name) == users)
            let started = await pipeline.processor.start(users.map { pipeline.event(user: $0, ["text": "hi"]) })
            #expect(started.reports.map(\.status).filter { $0 == .delivered }.count == 3)
            #expect(cache.unwarmed(users, pipeline: pipeline.definition.name).isEmpty, "looked up one by one, not read ahead")
        }
    }

    /// Filters that read settings look up one event's user at a time: the batch's users'
    /// settings are read at once before them (`SettingsAhead`), and a filter's lookup is
    /// answered from that read; an event alone reads its user's as before. The probe changes
    /// user2's zone in the store while user1's event is filtered: user2's lookup in the same
    /// batch answers what was read before, a lookup after the batch what is stored.
    @Test func aBatchsSettingsAreReadAheadOfItsFilters() async throws {
        let seen = ObservedState<[String: String]>([:])
        let probe = StageDescriptor.filter("settings-probe", "Notes where its user's settings come from.", SettingsProbe.Configuration.self) { _, _ in
            SettingsProbe(seen: seen)
        }
        let filters = "filters: [{type: settings.enabled}, {type: settings-probe}]\n" + Self.renderer
        try await ScriptedPipeline.with(filters, stages: [probe]) { pipeline in
            let store = pipeline.store.pipeline(pipeline.definition.name)
            for index in 0..<3 { try await pipeline.register("user\(index)", token(index)) }
            try await store.setSettings(["enabled": false], user: "user0")
            try await store.setSettings(["enabled": true, "zone": "Europe/Paris"], user: "user1")
            let events = (0..<3).map { pipeline.event(user: "user\($0)", ["text": "hi"]) }
            // The read ages on the processor's clock, which stands still here however busy the machine.
            let processor = pipeline.processor(clock: ManualClock(now: Date().timeIntervalSince1970))
            let started = await processor.start(events)
            let byEvent = Dictionary(uniqueKeysWithValues: started.reports.map { ($0.eventID, $0) })
            #expect(byEvent[events[0].id]?.code == "setting_off", "the setting read ahead still drops")
            #expect(byEvent[events[1].id]?.status == .delivered)
            #expect(byEvent[events[2].id]?.status == .delivered, "no settings: the default")
            #expect(seen.value == ["user1": "Europe/Paris", "user2": "none"], "answered from the batch's read")
            _ = await processor.start([pipeline.event(user: "user2", ["text": "alone"])])
            #expect(seen.value["user2"] == "Asia/Tokyo", "an event alone reads its own")
        }
    }

    @Test func aRetryDelaysOnlyItsOwnEvent() async throws {
        try await ScriptedPipeline.with(Self.renderer + "\ndelivery: {attempts: 3, backoff: 10ms, max_backoff: 10ms}") { pipeline in
            for index in 0..<3 { try await pipeline.register("user\(index)", token(index)) }
            pipeline.transport.script(token(1), [.retryAfter(seconds: nil, reason: ProviderReason(code: "ServiceUnavailable", "ServiceUnavailable"))])
            let completed = Mutex<[String]>([])
            let events = (0..<3).map { index in
                var event = pipeline.event(user: "user\(index)", ["text": "hi"])
                event.onComplete = { report in completed.withLock { $0.append(report.eventID) } }
                return event
            }
            let processor = pipeline.processor
            let started = await processor.start(events)
            #expect(Set(started.reports.map(\.eventID)) == [events[0].id, events[2].id])
            #expect(started.reports.allSatisfy { $0.status == .delivered })
            #expect(Set(completed.withLock { $0 }) == [events[0].id, events[2].id], "settled events complete before the retry")
            let delivered = try await pipeline.store.pipeline(pipeline.definition.name).lastDelivery(user: "user2")
            #expect(delivered?.delivery.outcome == .delivered, "and are recorded before it")
            #expect(started.followUps.map(\.events) == [1])
            let retried = await processor.finish(started.followUps[0])
            #expect(retried.map(\.eventID) == [events[1].id])
            #expect(retried.first?.status == .delivered)
            #expect(retried.first?.deliveries.first?.attempts == 2)
            #expect(completed.withLock { $0 }.last == events[1].id)
        }
    }

    /// Completions start in batch order, each right away; one that waits (an `http.event`
    /// source's queue removal waits for a commit) lets the next start, so all of a batch's
    /// waits overlap and their writes can share one commit. Here each waits until the last has
    /// started: run one after the other, the first would wait for ever.
    @Test func aBatchsCompletionsStartInOrderAndTheirWaitsOverlap() async throws {
        try await ScriptedPipeline.with(Self.renderer) { pipeline in
            for index in 0..<4 { try await pipeline.register("user\(index)", token(index)) }
            let gate = Gate()
            let started = Mutex<[String]>([])
            let events = (0..<4).map { index in
                var event = pipeline.event(user: "user\(index)", ["text": "hi"])
                let id = event.id
                event.onComplete = { _ in
                    let count = started.withLock { started in
                        started.append(id)
                        return started.count
                    }
                    if count == 4 { gate.open() } else { await gate.wait() }
                }
                return event
            }
            let reports = await pipeline.processor.start(events).reports
            #expect(reports.count == 4)
            #expect(started.withLock { $0 } == events.map(\.id))
        }
    }

    /// Nine events with `concurrency: 8`: the first sends are held, so workers are busy while
    /// the others arrive. They wait in the queue, are taken several at a time, and never more
    /// than eight are in flight.
    @Test func underLoadWorkersTakeSeveralEventsAtOnceWithinTheConcurrency() async throws {
        try await ScriptedPipeline.with(Self.renderer + "\ndelivery: {concurrency: 8}") { pipeline in
            for index in 0..<9 { try await pipeline.register("user\(index)", token(index)) }
            let completions = AsyncStream<EventReport>.makeStream()
            let runner = PipelineRunner(
                definition: pipeline.definition,
                store: pipeline.store,
                logger: Logger(label: "batch"),
                mode: .live,
                output: OutputSink { _ in },
                onEventCompleted: { completions.continuation.yield($0) }
            )
            pipeline.transport.hold(next: 4)
            var reports: [EventReport] = []
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await runner.run() }
                await withTaskGroup(of: Void.self) { submitters in
                    for index in 0..<9 {
                        submitters.addTask { try? await runner.submit(pipeline.event(user: "user\(index)", ["text": "hi"])) }
                    }
                    await pipeline.transport.waitForSends(4)
                    pipeline.transport.release()
                }
                for await report in completions.stream {
                    reports.append(report)
                    if reports.count == 9 { break }
                }
                runner.stop()
            }
            #expect(reports.allSatisfy { $0.status == .delivered })
            #expect(Set(pipeline.transport.sends).count == 9)
            #expect(pipeline.transport.mostRunning <= 8, "at most `concurrency` events in flight, saw \(pipeline.transport.mostRunning)")
            #expect(pipeline.transport.batches.contains { $0 > 1 }, "some worker took several events: \(pipeline.transport.batches)")
        }
    }
}

/// Notes the zone its event's user's settings give; at user1's event, moves user2's zone in the store.
struct SettingsProbe: Filter {
    struct Configuration: StageConfiguration {
        static let schema = Schema([])
    }

    let seen: ObservedState<[String: String]>
    var readsUserSettings: Bool { true }

    func apply(to event: Event, context: StageContext) async throws -> FilterResult {
        guard let user = event.user else { return .pass(event) }
        if user == "user1" { try await context.registrations.setSettings(["zone": "Asia/Tokyo"], user: "user2") }
        let zone = try await context.settings(user: user)["zone"]?.stringValue
        seen.update { $0[user] = zone ?? "none" }
        return .pass(event)
    }
}
