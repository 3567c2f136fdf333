import Foundation
import PushPipeCore
import Testing

/// An accepted event's work item: its payload is written straight to text, and read back it
/// must be the event that went in, every member of it.
@Suite struct QueuedEventWorkTests {
    let tokyo = Audience(keys: ["time_zone"], recognized: ["Asia/Tokyo"], value: "Asia/Tokyo", orUnset: false)

    func everyMember() -> QueuedEvent {
        var queued = QueuedEvent(
            pipeline: "p",
            source: "events",
            eventID: "e\"1\n",
            user: "alice \u{1F600}",
            time: 1_764_000_000.125,
            body: ["text": "a \"quoted\" line\nand\u{0}more", "n": 3, "nested": ["list": [1, 2.5, true, .null]]]
        )
        queued.caller = "backend"
        queued.traceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        queued.origin = "held"
        queued.audience = tokyo
        queued.holds = [PassedHold(stage: "quiet", until: 1_764_000_600.5)]
        var record = EventRecord(pipeline: "p", eventID: "e\"1\n", state: .deadLetter, acceptedAt: 1, updatedAt: 2)
        record.input = EventRecord.Input(time: 1, body: ["text": "hi"], audience: nil)
        record.reason = "gone"
        queued.replayOf = record
        return queued
    }

    @Test func theStoredPayloadNamesEveryMemberAsTheStoreReadsIt() throws {
        let queued = everyMember()
        let payload = try JSON.parse(queued.storedPayload)
        #expect(payload["event_id"] == .string(queued.eventID))
        #expect(payload["time"] == .double(queued.time))
        #expect(payload["body"] == queued.body)
        #expect(payload["user"] == .string("alice \u{1F600}"))
        #expect(payload["caller"] == "backend")
        #expect(payload["trace_parent"] == .string(queued.traceParent!))
        #expect(payload["origin"] == "held")
        #expect(payload["audience"] == tokyo.json)
        #expect(payload["holds"] == [["stage": "quiet", "until": 1_764_000_600.5]])
        #expect(payload["replay_of"]?["reason"] == "gone")
        #expect(payload.objectValue?.count == 10, "nothing else: \(payload)")
    }

    @Test func readBackItIsTheEventThatWentIn() throws {
        let queued = everyMember()
        let read = try QueuedEvent(work: queued.work, pipeline: "p", owner: "daemon", lease: .seconds(30))
        #expect(read.eventID == queued.eventID && read.user == queued.user && read.time == queued.time && read.body == queued.body)
        #expect(read.caller == queued.caller && read.traceParent == queued.traceParent && read.origin == queued.origin)
        #expect(read.audience == tokyo && read.holds == queued.holds)
        #expect(read.replayOf?.reason == "gone" && read.replayOf?.state == .deadLetter && read.replayOf?.input?.body == ["text": "hi"])

        let bare = QueuedEvent(pipeline: "p", source: "events", eventID: "e2", user: nil, time: 5.5, body: [:])
        #expect(try JSON.parse(bare.storedPayload) == ["event_id": "e2", "time": 5.5, "body": [:]], "absent members are left out")
        let readBare = try QueuedEvent(work: bare.work, pipeline: "p", owner: nil, lease: .zero)
        #expect(readBare.user == nil && readBare.caller == nil && readBare.replayOf == nil && readBare.audience == nil && readBare.holds.isEmpty)
    }
}
