import Foundation
import PushPipeCore
import Testing

@testable import PushPipeStages

/// Each transport reads its provider's answer into a reason's code once, where the answer
/// enters: APNs' `reason`, FCM's `errorCode`, a Web Push status. Metrics and the transport
/// gate use the code and nothing parses the text back.
@Suite struct ProviderReasonCodeTests {
    @Test(arguments: [
        (400, #"{"reason":"BadTopic"}"#, "BadTopic"), (410, #"{"reason":"Unregistered","timestamp":1}"#, "Unregistered"),
        (400, #"{"reason":"BadDeviceToken"}"#, "BadDeviceToken"), (503, "", "HTTP_503"),
        (429, #"{"reason":"TooManyRequests"}"#, "TooManyRequests"),
    ])
    func apnsReasonsAreTheirCodes(_ status: Int, _ body: String, _ code: String) {
        let (outcome, _) = APNsResponse(status: status, apnsID: nil, body: Data(body.utf8)).outcome
        #expect(outcome.providerReason?.code == code, "\(outcome)")
        #expect(outcome.providerReason?.throttlesSender == false, "APNs throttles one device, never the sender")
    }

    @Test(arguments: [
        (429, "QUOTA_EXCEEDED", true), (503, "UNAVAILABLE", false), (404, "UNREGISTERED", false), (400, nil as String?, false),
        (429, nil as String?, true),
    ])
    func fcmReasonsAreItsErrorCodes(_ status: Int, _ errorCode: String?, _ throttles: Bool) {
        var error: [String: JSON] = ["message": "words that vary per request: 42"]
        if let errorCode {
            error["details"] = [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(errorCode)]]
        }
        let (outcome, _) = FCMResponse(status: status, body: ["error": .object(error)], retryAfter: 5).outcome
        #expect(outcome.providerReason?.code == errorCode ?? "HTTP_\(status)", "\(outcome)")
        #expect(outcome.providerReason?.throttlesSender == throttles)
        #expect(outcome.reason?.contains("words that vary") == true, "the text keeps the message for people")
    }

    @Test(arguments: [
        (410, "HTTP_410", false), (404, "HTTP_404", false), (429, "HTTP_429", true), (503, "HTTP_503", false),
        (413, "HTTP_413", false), (401, "HTTP_401", false),
    ])
    func webPushReasonsAreTheStatus(_ status: Int, _ code: String, _ throttles: Bool) {
        let outcome = WebPushResponse(status: status, location: nil, retryAfter: 1, code: "109").outcome
        #expect(outcome.providerReason?.code == code && outcome.providerReason?.throttlesSender == throttles, "\(outcome)")
        #expect(outcome.reason?.hasSuffix("(109)") == true, "the service's code stays in the text")
    }
}
