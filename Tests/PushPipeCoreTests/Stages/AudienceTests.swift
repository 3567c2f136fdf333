import Foundation
import PushPipeCore
import Testing

/// Who a broadcast's copy for one zone goes to, and that a dead letter keeps it for its replay.
@Suite struct AudienceTests {
    let tokyo = Audience(keys: ["device_time_zone", "time_zone"], recognized: ["Asia/Tokyo", "Europe/Berlin"], value: "Asia/Tokyo", orUnset: false)

    @Test func theFirstRecognizedSettingDecides() {
        #expect(tokyo.includes(["time_zone": "Asia/Tokyo"]))
        #expect(!tokyo.includes(["time_zone": "Asia/Tokyo", "device_time_zone": "Europe/Berlin"]), "the device's zone first")
        #expect(tokyo.includes(["time_zone": "Asia/Tokyo", "device_time_zone": "Mars/Base"]), "an unknown zone is skipped")
        #expect(!tokyo.includes([:]))
        var rest = tokyo
        rest.value = "UTC"
        rest.orUnset = true
        #expect(rest.includes([:]) && rest.includes(["time_zone": "Mars/Base"]) && !rest.includes(["time_zone": "Asia/Tokyo"]))
    }

    @Test func aDeadLetterKeepsItsAudienceForItsReplay() throws {
        var record = EventRecord(pipeline: "p", eventID: "news@Asia/Tokyo", state: .deadLetter, acceptedAt: 1, updatedAt: 2)
        record.input = EventRecord.Input(time: 1, body: ["text": "hi"], audience: tokyo)
        let stored = try JSON.parse(String(decoding: record.storedText, as: UTF8.self))
        let read = try EventRecord(pipeline: "p", eventID: record.eventID, state: "dead_letter", updatedAt: 2, stored: stored)
        #expect(read.input?.audience == tokyo)
        var replay = QueuedEvent(pipeline: "p", source: "replay", eventID: record.eventID, user: nil, time: 1, body: ["text": "hi"])
        replay.replayOf = read
        #expect(replay.event.audience == tokyo, "the replay goes to the same users")
        var held = QueuedEvent(pipeline: "p", source: "held", eventID: record.eventID, user: nil, time: 1, body: [:])
        held.audience = tokyo
        #expect(try QueuedEvent(work: held.work, pipeline: "p", owner: nil, lease: .zero).event.audience == tokyo, "a held copy keeps it")
    }
}
