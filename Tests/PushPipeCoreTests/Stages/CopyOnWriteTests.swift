import Foundation
import Testing

@testable import PushPipeCore

/// Events, rendered notifications and requests share their fields between copies until one
/// changes: each must still behave as a value, a change seen by the changed copy only.
@Suite struct CopyOnWriteTests {
    @Test func aChangedEventLeavesItsCopiesAsTheyWere() {
        var event = Event(id: "e1", pipeline: "p", user: "alice", body: ["n": 1])
        let copy = event
        event.body = ["n": 2]
        event.user = nil
        event.commitOnDelivery = [StateWrite(stage: "s", key: "k", value: 1)]
        #expect(copy.body == ["n": 1] && copy.user == "alice" && copy.commitOnDelivery.isEmpty)
        #expect(event.body == ["n": 2] && event.user == nil && event.commitOnDelivery.count == 1)
        #expect(event.id == copy.id)
    }

    @Test func aChangedPayloadIsSerializedAgainForThatCopyOnly() {
        let token = DeviceToken(user: "alice", kind: "device", value: "abcdef0123456789")
        var notification = RenderedNotification(token: token, payload: ["a": 1])
        let copy = notification
        notification.payload = ["b": 2]
        notification.options["priority"] = 5
        #expect(String(decoding: copy.payloadBytes, as: UTF8.self) == #"{"a":1}"#)
        #expect(String(decoding: notification.payloadBytes, as: UTF8.self) == #"{"b":2}"#)
        #expect(copy.options.isEmpty && notification.options["priority"] == 5)
    }

    @Test func aChangedRequestLeavesItsCopiesAsTheyWere() {
        let token = DeviceToken(user: "alice", kind: "device", value: "abcdef0123456789")
        var request = OutgoingRequest(method: "POST", url: "https://example.com/a", headers: [("x", "1")], body: ["n": 1], token: token)
        let copy = request
        request.headers.append(("y", "2"))
        request.url = "https://example.com/b"
        #expect(copy.headers.count == 1 && copy.url == "https://example.com/a")
        #expect(request.headers.count == 2 && request.url == "https://example.com/b")
        #expect(request.bodyBytes == copy.bodyBytes)
    }
}
