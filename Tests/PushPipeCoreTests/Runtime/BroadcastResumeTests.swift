import Foundation
import Logging
import PushPipeCore
import PushPipePostgres
import PushPipePostgresTesting
import PushPipeTesting
import Synchronization
import Testing

/// A broadcast records each page with its progress, so that a failure on a later page is not
/// taken for a delivery and an interrupted broadcast does not start again from page 1. On real
/// stores: an early stop is a dead letter whose replay reaches only those not reached, a
/// broadcast stopped at the drain timeout goes on after its last page at the next run, one
/// killed while a page is slow to settle goes on inside that page, and one whose recipients
/// keep failing stops at a bound instead of keeping them all.
@Suite(.timeLimit(.minutes(2))) struct BroadcastResumeTests {
    static let users = 1_600

    static func token(_ index: Int) -> String { String(format: "%032x", index + 1) }

    static func register(_ count: Int, in store: any Store, pipeline: String) async throws {
        for index in 0..<count {
            try await store.pipeline(pipeline).register(
                DeviceToken(user: String(format: "user-%05d", index), kind: "device", value: token(index)),
                environment: nil,
                replace: false
            )
        }
    }

    /// Replays a dead letter as `pushpipe dead-letters replay` does, and claims it as a daemon's
    /// intake does: the event its pipeline then processes.
    static func replay(_ letter: EventRecord, in store: any Store) async throws -> Event {
        let input = try #require(letter.input, "replayable")
        var queued = QueuedEvent(
            pipeline: letter.pipeline,
            source: QueuedEventIntake.replayKey,
            eventID: letter.eventID,
            user: letter.user,
            time: input.time,
            body: input.body,
            lease: .seconds(-1)
        )
        queued.caller = letter.caller
        queued.replayOf = letter
        #expect(try await store.replayDeadLetter(queued))
        let claimed = try await store.pipeline(letter.pipeline).claimQueuedEvents(source: QueuedEventIntake.replayKey, lease: .seconds(15), limit: 10)
        return try #require(claimed.first).event
    }

    static func processor(_ definition: PipelineDefinition, _ store: any Store, clock: any DaemonClock = .system) -> EventProcessor {
        EventProcessor(
            definition: definition,
            store: store,
            logger: Logger(label: "broadcast"),
            mode: .live,
            output: OutputSink { _ in },
            clock: clock
        )
    }

    @Test func aBroadcastFailingOnItsSecondPageIsADeadLetterWhoseReplayReachesTheRest() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer) { pipeline in
            try await Self.failingOnPageTwo(pipeline, store: pipeline.store)
        }
    }

    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func postgresBroadcastFailingOnItsSecondPageIsADeadLetterWhoseReplayReachesTheRest() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer) { pipeline in
            try await TestStores.withFreshPostgresStore { try await Self.failingOnPageTwo(pipeline, store: $0) }
        }
    }

    /// 1,600 users, the renderer failing on the second page: 1,000 got it, 600 did not.
    static func failingOnPageTwo(_ pipeline: ScriptedPipeline, store: any Store) async throws {
        let name = pipeline.definition.name
        try await register(users, in: store, pipeline: name)
        let failing = PageHookRenderer.around(pipeline.definition) { page in
            if page == 2 { throw ScriptedRendererError(page: page) }
        }
        var event = pipeline.event(user: nil, ["text": "to everyone"])
        event.caller = "token"
        let report = await processor(failing, store).process(event)
        #expect(report.status == .failed, "not delivered: 600 users never got it")
        #expect(pipeline.transport.sends.count == 1_000)

        let dead = try #require(try await store.eventRecords(eventID: event.id, pipeline: name).records.first)
        #expect(dead.state == .deadLetter, "was \(dead.state): the users of the pages after the failure were never reached")
        #expect(dead.reason?.contains("scripted failure on page 2") == true, "\(dead.reason ?? "no reason")")
        #expect(dead.input?.body == ["text": "to everyone"], "replayable")
        let progress = try #require(dead.statusJSON["broadcast"], "the record tells where the broadcast stopped")
        #expect(progress["reached_user"] == "user-00999")
        #expect(progress["deliveries"] == 1_000)
        #expect(try await store.deadLetterCounts()[name] == 1)

        // The replay (the renderer fixed) goes on after the last page that went out.
        let replayed = await processor(pipeline.definition, store).process(try await replay(dead, in: store))
        #expect(replayed.status == .delivered)
        let sends = pipeline.transport.sends
        #expect(Array(sends[1_000...]).sorted() == (1_000..<users).map(token), "only the 600 users not reached")
        #expect(Set(sends).count == users && sends.count == users, "every user exactly once")
        let after = try #require(try await store.eventRecords(eventID: event.id, pipeline: name).records.first)
        #expect(after.state == .delivered)
        #expect(after.statusJSON["broadcast"]?["reached_all"] == true, "every page went out")
        #expect(try await store.deadLetterCounts()[name] == nil)
    }

    /// Stopped at the drain timeout while its second page renders (a plugin call cancelled): a
    /// kill there leaves the first page recorded with the progress past it; the event is no
    /// dead letter (its source keeps it), and the next run goes on at page 2.
    @Test func aBroadcastStoppedAfterItsFirstPageGoesOnAtItsSecondAtTheNextRun() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer) { pipeline in
            let name = pipeline.definition.name
            try await Self.register(Self.users, in: pipeline.store, pipeline: name)
            let (pageTwo, reached) = AsyncStream<Void>.makeStream()
            let stopping = PageHookRenderer.around(pipeline.definition) { page in
                guard page == 2 else { return }
                reached.yield()
                // A plugin's answer that never comes: the drain timeout cancels the wait.
                try? await Task.sleep(for: .seconds(3600))
                throw CancellationError()
            }
            let event = pipeline.event(user: nil, ["text": "to everyone"])
            let running = Task { await Self.processor(stopping, pipeline.store).process(event) }
            for await _ in pageTwo { break }

            // What a SIGKILL here leaves: the first page's deliveries and the progress past it.
            let killed = try #require(try await pipeline.store.eventRecords(eventID: event.id, pipeline: name).records.first)
            #expect(killed.state == .processing)
            #expect(killed.statusJSON["broadcast"]?["after_user"] == "user-00999")
            #expect(try await pipeline.store.pipeline(name).lastDelivery(user: "user-00999")?.eventID == event.id)
            // Where it goes on from: its work item's cursor, committed with the page.
            let cursor = try await pipeline.store.pipeline(name).work.broadcastProgress(eventID: event.id)
            #expect(cursor?.after == "user-00999" && cursor?.deliveries == 1_000 && cursor == killed.broadcast, "\(String(describing: cursor))")

            running.cancel()
            #expect(await running.value.status == .failed)
            let stopped = try #require(try await pipeline.store.eventRecords(eventID: event.id, pipeline: name).records.first)
            #expect(stopped.state == .processing, "no dead letter: the source keeps the event and sends it again")
            #expect(try await pipeline.store.deadLetterCounts().isEmpty)
            #expect(pipeline.transport.sends.count == 1_000)

            // The next run: the same event, claimed again from its queue.
            let report = await Self.processor(pipeline.definition, pipeline.store).process(event)
            #expect(report.status == .delivered)
            let sends = pipeline.transport.sends
            #expect(sends.count == Self.users, "1,600 deliveries for 1,600 users, not \(sends.count)")
            #expect(Set(sends).count == Self.users, "every user exactly once")
            #expect(Array(sends[1_000...]).sorted() == (1_000..<Self.users).map(Self.token), "the run went on at page 2")
            let done = try #require(try await pipeline.store.eventRecords(eventID: event.id, pipeline: name).records.first)
            #expect(done.state == .delivered)
            #expect(report.omittedDeliveries == Self.users - report.deliveries.count, "the report counts the pages of both runs")
            #expect(try await pipeline.store.pipeline(name).lastDelivery(user: "user-01599")?.eventID == event.id)
            #expect(try await pipeline.store.pipeline(name).work.broadcastProgress(eventID: event.id)?.reachedAll == true)
        }
    }

    /// The cursor, not the record, says where a broadcast goes on; the record only says that
    /// one is under way (an id used again starts afresh), and where one goes on that an earlier
    /// version began, which left no cursor.
    @Test func aBroadcastGoesOnFromItsWorkItemsCursor() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer) { pipeline in
            try await Self.goesOnFromItsCursor(pipeline, store: pipeline.store)
        }
    }

    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func postgresBroadcastGoesOnFromItsWorkItemsCursor() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer) { pipeline in
            try await TestStores.withFreshPostgresStore { try await Self.goesOnFromItsCursor(pipeline, store: $0) }
        }
    }

    static func goesOnFromItsCursor(_ pipeline: ScriptedPipeline, store: any Store) async throws {
        let name = pipeline.definition.name
        let work = store.pipeline(name).work
        try await register(users, in: store, pipeline: name)
        /// Fails on its second page.
        let failing = {
            PageHookRenderer.around(pipeline.definition) { page in
                if page == 2 { throw ScriptedRendererError(page: page) }
            }
        }
        let sent = { pipeline.transport.sends.count }

        // Stopped after page 1; its cursor then moved back to the middle of it: sent again by its
        // source (a reply file retried), the renderer mended, it goes on after user-00499.
        let first = pipeline.event(user: nil, ["text": "to everyone"])
        #expect(await processor(failing(), store).process(first).status == .failed)
        #expect(try await work.broadcastProgress(eventID: first.id)?.after == "user-00999")
        let earlier = BroadcastProgress(after: "user-00499", reached: "user-00499", deliveries: 500, delivered: 500)
        try await store.pipeline(name).recordOutcome(
            deliveries: [],
            state: [],
            events: [],
            webhooks: [],
            finishing: [],
            progress: [.broadcast(eventID: first.id, earlier, at: 0)]
        )
        #expect(await processor(pipeline.definition, store).process(first).status == .delivered)
        #expect(sent() == 1_000 + 1_100, "users 500 to 1,599, as the cursor says, not 1,000 on as the record says: \(sent())")
        #expect(try await work.broadcastProgress(eventID: first.id)?.reachedAll == true)

        // The same id used again (accepted anew: a record without progress): a broadcast of its own.
        try await store.pipeline(name).recordOutcome(
            deliveries: [],
            state: [],
            events: [EventRecord(pipeline: name, eventID: first.id, state: .accepted, acceptedAt: 1, updatedAt: 1)]
        )
        #expect(await processor(pipeline.definition, store).process(first).status == .delivered)
        #expect(sent() == 2_100 + users, "every user again, not nothing: \(sent())")

        // Begun by an earlier version (its record's progress, no cursor): it goes on where the record says.
        let second = pipeline.event(user: nil, ["text": "to everyone"])
        #expect(await processor(failing(), store).process(second).status == .failed)
        try await work.remove(WorkItem.broadcastKind, keys: [second.id])
        let before = sent()
        #expect(await processor(pipeline.definition, store).process(second).status == .delivered)
        #expect(sent() - before == 600, "the 600 after page 1: \(sent() - before)")
    }

    /// The store refuses a page's deliveries: the event's dead letter shows the progress past
    /// the page, and its cursor says the same, so a kill before the next page does not send that
    /// page again.
    @Test func aRefusedPageSavesItsCursorWithItsDeadLetter() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer) { pipeline in
            try await Self.refusedPage(pipeline, store: pipeline.store)
        }
    }

    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func postgresRefusedPageSavesItsCursorWithItsDeadLetter() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer) { pipeline in
            try await TestStores.withFreshPostgresStore { try await Self.refusedPage(pipeline, store: $0) }
        }
    }

    static func refusedPage(_ pipeline: ScriptedPipeline, store: any Store) async throws {
        let name = pipeline.definition.name
        try await register(users, in: store, pipeline: name)
        try await QueuedEventOutcomeTests.refuseDeliveries(store)
        let event = pipeline.event(user: nil, ["text": "to everyone"])
        // What a kill before page 2 leaves: the record's progress and the cursor.
        let seen = Mutex<(shown: BroadcastProgress?, cursor: BroadcastProgress?)?>(nil)
        let looking = PageHookRenderer.around(pipeline.definition) { [id = event.id] page in
            guard page == 2 else { return }
            let shown = try await store.eventRecords(eventID: id, pipeline: name).records.first?.broadcast
            let cursor = try await store.pipeline(name).work.broadcastProgress(eventID: id)
            seen.withLock { $0 = (shown, cursor) }
        }
        _ = await processor(looking, store).process(event)
        let (shown, cursor) = try #require(seen.withLock { $0 }, "page 2 was rendered")
        #expect(shown?.after == "user-00999", "\(String(describing: shown))")
        #expect(cursor == shown, "cursor \(String(describing: cursor)), record \(String(describing: shown))")
    }

    /// Stopped at the drain timeout while its page is in flight: the provider accepted the
    /// page, so its deliveries and the progress past it are recorded though the broadcast was
    /// cancelled, and the next run sends it to no one again.
    @Test func aBroadcastCancelledWhileItsPageIsSentRecordsThatPage() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer) { pipeline in
            try await Self.cancelledWhileSending(pipeline, store: pipeline.store)
        }
    }

    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func postgresBroadcastCancelledWhileItsPageIsSentRecordsThatPage() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer) { pipeline in
            try await TestStores.withFreshPostgresStore { try await Self.cancelledWhileSending(pipeline, store: $0) }
        }
    }

    /// Stopped at the drain timeout partway through a page: it sends no more of the page, and
    /// records the users it reached, so the next run goes on with the first user it did not:
    /// sending the rest, `fanout` at a time, would make the stop wait on a slow provider.
    @Test func aBroadcastCancelledPartwayThroughAPageSendsNoMoreOfItAndGoesOnWhereItStopped() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer + "\ndelivery: {fanout: 1}") { pipeline in
            let name = pipeline.definition.name
            try await Self.register(5, in: pipeline.store, pipeline: name)
            pipeline.transport.hold(next: 1)
            let event = pipeline.event(user: nil, ["text": "to everyone"])
            let running = Task { await Self.processor(pipeline.definition, pipeline.store).process(event) }
            // The first user's send is in flight when the stop comes: it ends, and no other starts.
            await pipeline.transport.waitForSends(1)
            running.cancel()
            pipeline.transport.release()
            #expect(await running.value.status == .failed)
            #expect(pipeline.transport.sends.count == 1, "\(pipeline.transport.sends.count) sends: the stop sent the rest of the page")

            let stopped = try #require(try await pipeline.store.eventRecords(eventID: event.id, pipeline: name).records.first)
            #expect(stopped.state == .processing)
            #expect(stopped.statusJSON["broadcast"]?["after_user"] == "user-00000", "the user it reached")
            #expect(try await pipeline.store.pipeline(name).lastDelivery(user: "user-00000")?.eventID == event.id)
            #expect(await Self.processor(pipeline.definition, pipeline.store).process(event).status == .delivered)
            let sends = pipeline.transport.sends
            #expect(sends.sorted() == (0..<5).map(Self.token), "every user exactly once, not \(sends)")
        }
    }

    /// Stopped at the drain timeout while the store is away and its sent page waits to be
    /// recorded: the write goes on for a grace after the stop, so once the store is back the
    /// page is recorded instead of being sent again by the next daemon.
    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func aBroadcastStoppedWhileTheStoreIsAwayRecordsItsSentPageOnceTheStoreIsBack() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer) { pipeline in
            let url = try await TestStores.freshPostgresURL() + "&connect_timeout=3"
            let (logger, messages) = StreamingLogHandler.logger()
            let store = try await PostgresStore(location: try PostgresLocation(parsing: url), logger: logger)
            let outage = try DatabaseOutage(url: url)
            try await withCleanup(
                {
                    let name = pipeline.definition.name
                    try await Self.register(3, in: store, pipeline: name)
                    pipeline.transport.hold(next: 3)
                    let event = pipeline.event(user: nil, ["text": "to everyone"])
                    let processor = EventProcessor(
                        definition: pipeline.definition,
                        store: store,
                        logger: logger,
                        mode: .live,
                        output: OutputSink { _ in }
                    )
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask { await outage.run() }
                        defer { group.cancelAll() }
                        let running = Task { await processor.process(event) }
                        await pipeline.transport.waitForSends(3)
                        try await outage.begin()
                        pipeline.transport.release()
                        // The page's write found the store away; the drain timeout comes now.
                        for await message in messages where message.contains("does not answer") { break }
                        running.cancel()
                        try await outage.end()
                        _ = await running.value
                    }
                    let record = try #require(try await store.eventRecords(eventID: event.id, pipeline: name).records.first)
                    #expect(record.statusJSON["broadcast"]?["after_user"] == "user-00002", "the page that went out is recorded")
                    #expect(try await store.pipeline(name).lastDelivery(user: "user-00002")?.eventID == event.id)
                    #expect(await Self.processor(pipeline.definition, store).process(event).status == .delivered)
                    #expect(pipeline.transport.sends.count == 3, "sent once, not \(pipeline.transport.sends.count) times")
                },
                cleanup: { try? await store.close() }
            )
        }
    }

    static func cancelledWhileSending(_ pipeline: ScriptedPipeline, store: any Store) async throws {
        let name = pipeline.definition.name
        try await register(3, in: store, pipeline: name)
        pipeline.transport.hold(next: 3)
        let event = pipeline.event(user: nil, ["text": "to everyone"])
        let running = Task { await processor(pipeline.definition, store).process(event) }
        await pipeline.transport.waitForSends(3)
        running.cancel()
        pipeline.transport.release()
        _ = await running.value

        let record = try #require(try await store.eventRecords(eventID: event.id, pipeline: name).records.first)
        #expect(record.statusJSON["broadcast"]?["after_user"] == "user-00002", "the page that went out is recorded")
        #expect(try await store.pipeline(name).lastDelivery(user: "user-00002")?.eventID == event.id)
        #expect(await processor(pipeline.definition, store).process(event).status == .delivered)
        #expect(pipeline.transport.sends.count == 3, "sent once, not \(pipeline.transport.sends.count) times")
    }

    /// Killed while its second page waits out the backoff of a few retries: what the provider
    /// accepted of that page is recorded before the wait, with the recipients left to retry, so
    /// the daemon that takes the event over sends the page to those recipients only, and to
    /// none the provider accepted.
    @Test func aBroadcastKilledWhileItsPageWaitsOnRetriesResumesWithTheRecipientsLeftUnresolved() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer + "\ndelivery: {attempts: 5, backoff: 30s, max_backoff: 30s}") { pipeline in
            try await Self.killedWhileRetrying(pipeline, store: pipeline.store)
        }
    }

    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func postgresBroadcastKilledWhileItsPageWaitsOnRetriesResumesWithTheRecipientsLeftUnresolved() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer + "\ndelivery: {attempts: 5, backoff: 30s, max_backoff: 30s}") { pipeline in
            try await TestStores.withFreshPostgresStore { try await Self.killedWhileRetrying(pipeline, store: $0) }
        }
    }

    /// 1,200 users; five tokens of the second page answer retry-after once.
    static func killedWhileRetrying(_ pipeline: ScriptedPipeline, store: any Store) async throws {
        let name = pipeline.definition.name
        let users = 1_200
        try await register(users, in: store, pipeline: name)
        let retried = (1_100..<1_105).map(token)
        for token in retried { pipeline.transport.script(token, [.retryAfter(seconds: nil, reason: .other("503"))]) }
        let clock = ManualClock()
        let event = pipeline.event(user: nil, ["text": "to everyone"])
        let killed = processor(pipeline.definition, store, clock: clock)
        let running = Task { await killed.process(event) }
        // Asleep in the backoff of its retries: the daemon is killed there, and writes nothing more.
        try await clock.sleepers(atLeast: retried.count)
        #expect(pipeline.transport.sends.count == users)
        #expect(
            try await store.pipeline(name).lastDelivery(user: "user-01199")?.eventID == event.id,
            "what the provider accepted of the page is recorded before the wait"
        )

        // The daemon that takes the event over (its lease lapsed).
        let report = await processor(pipeline.definition, store).process(event)
        #expect(report.status == .delivered)
        let resent = Array(pipeline.transport.sends[users...])
        let onlyTheUnresolved = resent.sorted() == retried
        #expect(
            onlyTheUnresolved,
            "\(resent.count) sends again, \(Set(resent).subtracting(retried).count) of them accepted before: only the 5 left unresolved may go again"
        )
        #expect(report.deliveries.count + (report.omittedDeliveries ?? 0) == users, "one delivery per user across both runs")
        let record = try #require(try await store.eventRecords(eventID: event.id, pipeline: name).records.first)
        #expect(record.state == .delivered)
        #expect(record.recipients.allSatisfy { !$0.isUnresolved }, "each retried recipient's outcome replaced the one left unresolved")
        #expect(record.statusJSON["broadcast"]?["reached_all"] == true)

        running.cancel()
        _ = await running.value
    }

    /// Killed while its second page goes out slowly (answers that come late, a provider whose
    /// connections are handed over one request at a time): what was accepted of the page is
    /// recorded every so often while the rest goes out, so the daemon that takes the event over
    /// goes on inside the page, after the users recorded.
    @Test func aBroadcastKilledWhileItsPageGoesOutSlowlyResumesInsideThePage() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer + "\ndelivery: {fanout: 10}") { pipeline in
            try await Self.killedWhileSendingSlowly(pipeline, store: pipeline.store)
        }
    }

    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func postgresBroadcastKilledWhileItsPageGoesOutSlowlyResumesInsideThePage() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer + "\ndelivery: {fanout: 10}") { pipeline in
            try await TestStores.withFreshPostgresStore { try await Self.killedWhileSendingSlowly(pipeline, store: $0) }
        }
    }

    /// 1,200 users, sent 10 at a time: the first answer of the second page comes an hour late,
    /// and the daemon is killed while the page's second ten are out.
    static func killedWhileSendingSlowly(_ pipeline: ScriptedPipeline, store: any Store) async throws {
        let name = pipeline.definition.name
        let users = 1_200
        try await register(users, in: store, pipeline: name)
        let clock = ManualClock()
        let event = pipeline.event(user: nil, ["text": "to everyone"])
        let killed = processor(pipeline.definition, store, clock: clock)
        pipeline.transport.hold(token: token(1_000))
        pipeline.transport.hold(token: token(1_010))
        let running = Task { await killed.process(event) }
        await pipeline.transport.waitForSends(1_010)
        clock.advance(by: .seconds(3600))
        pipeline.transport.release(token: token(1_000))
        // The page's second ten are out, one of them unanswered: the daemon is killed there.
        await pipeline.transport.waitForSends(1_020)
        #expect(
            try await store.pipeline(name).lastDelivery(user: "user-01009")?.eventID == event.id,
            "the page's first ten are recorded while the rest goes out"
        )

        // The daemon that takes the event over (its lease lapsed).
        let report = await processor(pipeline.definition, store).process(event)
        #expect(report.status == .delivered)
        let resent = Array(pipeline.transport.sends[1_020...])
        let afterTheRecorded = resent.sorted() == (1_010..<users).map(token)
        #expect(
            afterTheRecorded,
            "\(resent.count) sends, \(Set(resent).intersection((1_000..<1_010).map(token)).count) of them to the ten recorded: only the 190 users after them may go"
        )
        #expect(report.deliveries.count + (report.omittedDeliveries ?? 0) == users, "one delivery per user across both runs")
        let record = try #require(try await store.eventRecords(eventID: event.id, pipeline: name).records.first)
        #expect(record.state == .delivered)

        running.cancel()
        pipeline.transport.release()
        _ = await running.value
    }

    /// Killed while its page waits on retries, then failing on that page at the next run (a
    /// plugin's render): the dead letter keeps how far into the page the record reached, and
    /// its replay sends the page's users only what was left unresolved.
    @Test func aBroadcastKilledInsideItsPageThenFailingThereIsADeadLetterWhoseReplaySendsNothingAcceptedAgain() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer + "\ndelivery: {attempts: 5, backoff: 30s, max_backoff: 30s}") { pipeline in
            let name = pipeline.definition.name
            let users = 1_200
            try await Self.register(users, in: pipeline.store, pipeline: name)
            let retried = (1_100..<1_105).map(Self.token)
            for token in retried { pipeline.transport.script(token, [.retryAfter(seconds: nil, reason: .other("503"))]) }
            let clock = ManualClock()
            var event = pipeline.event(user: nil, ["text": "to everyone"])
            event.caller = "token"
            let killed = pipeline.processor(clock: clock)
            let running = Task { [event] in await killed.process(event) }
            try await clock.sleepers(atLeast: retried.count)

            // The next daemon's renderer fails on the page the broadcast was killed in.
            let failing = PageHookRenderer.around(pipeline.definition) { page in throw ScriptedRendererError(page: page) }
            #expect(await Self.processor(failing, pipeline.store).process(event).status == .failed)
            let dead = try #require(try await pipeline.store.eventRecords(eventID: event.id, pipeline: name).records.first)
            #expect(dead.state == .deadLetter)
            #expect(Set(dead.recipients.filter(\.isUnresolved).map(\.token)) == Set(retried), "the recipients left to retry, and no other")

            let replayed = await Self.processor(pipeline.definition, pipeline.store).process(try await Self.replay(dead, in: pipeline.store))
            #expect(replayed.status == .delivered)
            let resent = Array(pipeline.transport.sends[users...])
            let onlyTheUnresolved = resent.sorted() == retried
            #expect(onlyTheUnresolved, "\(resent.count) sends again: only the 5 left unresolved may go again")
            #expect(try await pipeline.store.eventRecords(eventID: event.id, pipeline: name).records.first?.state == .delivered)

            running.cancel()
            _ = await running.value
        }
    }

    /// A user's two devices settle apart (one accepted at once, one after a retry), so the page
    /// is recorded in two writes: the user's history holds the broadcast once.
    @Test func aUserWhoseDevicesSettleInTwoWritesOfAPageHasTheBroadcastOnceInHistory() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer + "\ndelivery: {attempts: 5, backoff: 10ms, max_backoff: 10ms}") { pipeline in
            let name = pipeline.definition.name
            try await Self.register(3, in: pipeline.store, pipeline: name)
            try await pipeline.register("user-00001", "second-device")
            pipeline.transport.script("second-device", [.retryAfter(seconds: nil, reason: .other("503"))])
            let event = pipeline.event(user: nil, ["text": "to everyone"])
            #expect(await pipeline.processor.process(event).status == .delivered)
            #expect(pipeline.transport.sends.count == 5)
            let history = try await pipeline.store.pipeline(name).history(user: "user-00001", limit: 10, before: nil)
            #expect(history.map(\.eventID) == [event.id], "\(history.count) entries")
            let record = try #require(try await pipeline.store.eventRecords(eventID: event.id, pipeline: name).records.first)
            #expect(record.state == .delivered)
            #expect(record.recipients.count == 4, "one outcome per device, the retried one's replacing the one it waited with")
        }
    }

    /// Killed after its last page was recorded, before its event left the queue: claimed again,
    /// it sends nothing (every page went out), and its record stays delivered.
    @Test func aBroadcastClaimedAgainAfterItsLastPageSendsNothingAgain() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer) { pipeline in
            try await Self.register(1_200, in: pipeline.store, pipeline: pipeline.definition.name)
            let event = pipeline.event(user: nil, ["text": "to everyone"])
            #expect(await pipeline.processor.process(event).status == .delivered)
            #expect(await pipeline.processor.process(event).status == .delivered)
            #expect(pipeline.transport.sends.count == 1_200, "sent once, not \(pipeline.transport.sends.count) times")
            let record = try await pipeline.store.eventRecords(eventID: event.id, pipeline: pipeline.definition.name).records.first
            #expect(record?.state == .delivered)
        }
    }

    /// A provider down for the whole broadcast: it stops once 5,000 recipients are left
    /// unresolved (a dead letter that keeps them and its progress) instead of keeping every one
    /// of the audience, and its replay retries those and reaches the users after them.
    @Test func aBroadcastWhoseRecipientsKeepFailingStopsAtABoundAndItsReplayGoesOn() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer + "\ndelivery: {attempts: 1}") { pipeline in
            let name = pipeline.definition.name
            let users = 6_000
            try await Self.register(users, in: pipeline.store, pipeline: name)
            pipeline.transport.answer(.retryAfter(seconds: nil, reason: .other("503")))
            let event = pipeline.event(user: nil, ["text": "to everyone"])
            #expect(await pipeline.processor.process(event).status == .failed)
            #expect(pipeline.transport.sends.count == 5_000, "stopped after the page that left 5,000 unresolved")

            let dead = try #require(try await pipeline.store.eventRecords(eventID: event.id, pipeline: name).records.first)
            #expect(dead.state == .deadLetter)
            #expect(dead.recipients.count == 5_000 && dead.recipients.allSatisfy(\.isUnresolved), "every one a replay retries, no more")
            #expect(dead.statusJSON["broadcast"]?["reached_user"] == "user-04999")

            pipeline.transport.answer(.delivered(providerID: "ok"))
            #expect(await pipeline.processor.process(try await Self.replay(dead, in: pipeline.store)).status == .delivered)
            let resent = Array(pipeline.transport.sends[5_000...])
            #expect(
                resent.count == users && Set(resent) == Set((0..<users).map(Self.token)),
                "the 5,000 retried and the 1,000 never reached, once each"
            )
            #expect(try await pipeline.store.eventRecords(eventID: event.id, pipeline: name).records.first?.state == .delivered)
        }
    }
}
