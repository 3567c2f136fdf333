import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// What the processor records of each event: the status callers read and the dead letters a
/// replay sends again, only to the devices that did not get them.
@Suite struct EventRecordTests {
    /// A broadcast whose few failures hide among thousands: its record keeps every failure, and
    /// its replay reaches those devices alone.
    @Test func aBroadcastsFailuresAreKeptAndOnlyThoseAreReplayed() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer + "\ndelivery: {attempts: 2, backoff: 1ms, max_backoff: 1ms}") { pipeline in
            let users = 1_500
            for index in 0..<users { try await pipeline.register(String(format: "user-%05d", index), String(format: "%032x", index + 1)) }
            let failing = [1_200, 1_300, 1_400].map { String(format: "%032x", $0 + 1) }
            let failure = ProviderReason(code: "InternalServerError", "500 InternalServerError")
            for token in failing {
                pipeline.transport.script(token, [.retryAfter(seconds: nil, reason: failure), .retryAfter(seconds: nil, reason: failure)])
            }
            var event = pipeline.event(user: nil, ["text": "to everyone"])
            event.caller = "token"
            _ = await pipeline.processor.process(event)

            let dead = try #require(try await pipeline.store.eventRecords(eventID: event.id, pipeline: "scripted").records.first)
            #expect(dead.state == .deadLetter)
            #expect(dead.recipients.count == 1_003 && dead.omittedRecipients == 497, "the first 1,000 and every failure")
            #expect(dead.replayAddresses == Set(failing.map { "device:" + $0 }))
            #expect(
                dead.recipients.filter(\.isUnresolved).allSatisfy { $0.reasonCode == "InternalServerError" && $0.reason == failure.text },
                "the record keeps the code apart from the text"
            )
            #expect(dead.statusJSON["recipients"]?.arrayValue?.compactMap { $0["reason_code"]?.stringValue }.count == 3)
            #expect(dead.input?.body == ["text": "to everyone"])
            #expect(try await pipeline.store.deadLetters(pipeline: nil, since: nil, limit: 10).map(\.eventID) == [event.id])

            let sentBefore = pipeline.transport.sends.count
            var replay = Event(id: event.id, pipeline: "scripted", user: nil, time: event.time, body: dead.input!.body)
            replay.caller = dead.caller
            replay.replayOf = dead
            let report = await pipeline.processor.process(replay)
            #expect(report.status == .delivered)
            #expect(Array(pipeline.transport.sends[sentBefore...]).sorted() == failing.sorted(), "only the devices that did not get it")
            let after = try #require(try await pipeline.store.eventRecords(eventID: event.id, pipeline: "scripted").records.first)
            #expect(after.state == .delivered && after.recipients.allSatisfy { $0.outcome == .delivered })
            #expect(after.acceptedAt == dead.acceptedAt)
        }
    }

    /// A drop of an event the daemon found itself (a poll with nothing new) leaves no record;
    /// one a caller posted does, as dropped, like one nobody could receive.
    @Test func dropsAreRecordedForCallersOnly() async throws {
        try await ScriptedPipeline.with(EventProcessorTests.renderer) { pipeline in
            let found = pipeline.event(user: "nobody", ["text": "a"])
            _ = await pipeline.processor.process(found)
            #expect(try await pipeline.store.eventRecords(eventID: found.id, pipeline: nil).records.isEmpty)
            var posted = pipeline.event(user: "nobody", ["text": "b"])
            posted.caller = ""
            _ = await pipeline.processor.process(posted)
            let record = try #require(try await pipeline.store.eventRecords(eventID: posted.id, pipeline: nil).records.first)
            #expect(record.state == .dropped && record.code == "no_recipients" && record.stage == "renderer" && record.caller == "")
        }
    }
}
