import PushPipeCore
import Testing

/// A dry run prints what would be sent, and FCM carries the device token in its body: the
/// printed form masks it there as the tap does, as well as in the URL and headers.
@Suite struct OutgoingRequestTests {
    static let token = "dXp1c2VyLXRva2VuOkFQQTkxYkhQUm1mRmlnWFl6V1h0cXZ6a0pCN0RyWVd6bmhKcU5XV3pJeFl6"

    static var fcmRequest: OutgoingRequest {
        let body: JSON = [
            "message": [
                "token": .string(token), "data": ["about": .string("sent to \(token) today")],
                "notification": ["title": "Hello"],
            ]
        ]
        return OutgoingRequest(
            method: "POST",
            url: "https://fcm.googleapis.com/v1/projects/p/messages:send",
            headers: [("authorization", "Bearer ya29.secret-access-token-value")],
            body: body,
            token: DeviceToken(user: "alice", kind: "fcm", value: token)
        )
    }

    @Test func thePrintedRequestShowsNoWholeTokenInItsBody() {
        let printed = Self.fcmRequest.printable
        #expect(!printed.contains(Self.token), "\(printed)")
        #expect(printed.contains(TokenMask.mask(Self.token)))
        #expect(!printed.contains("secret-access-token-value"))
        #expect(printed.contains("Hello"), "the rest of the body is shown as it is")
    }

    @Test func theTapsFormShowsNoWholeTokenEither() {
        let shown = Self.fcmRequest.maskedJSON.prettyText
        #expect(!shown.contains(Self.token), "\(shown)")
    }

    @Test func theRequestSentKeepsTheToken() {
        #expect(Self.fcmRequest.json["body"]?["message"]?["token"]?.stringValue == Self.token)
    }
}
