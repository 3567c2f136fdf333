import PushPipeCore
import Testing

@Suite struct TokenMaskTests {
    @Test func keepsTheFirstEightCharactersOfALongToken() {
        #expect(TokenMask.mask(String(repeating: "ab", count: 32)) == "abababab…")
        #expect(DeviceToken(user: "u", kind: "device", value: "0123456789abcdef").masked == "01234567…")
    }

    @Test func hidesAShortTokenEntirely() {
        #expect(TokenMask.mask("12345678") == "••••••••")
        #expect(TokenMask.mask("abc") == "•••")
        #expect(TokenMask.mask("") == "")
    }

    @Test func countsCharactersNotBytes() {
        #expect(TokenMask.mask("ééééééééé") == "éééééééé…")
        #expect(TokenMask.mask("éééééééé") == "••••••••")
    }

    /// A Web Push subscription shows its push service and the start of its id, never its keys.
    @Test func aWebPushSubscriptionShowsItsServiceAndTheStartOfItsID() {
        let subscription = #"{"endpoint":"https://fcm.googleapis.com/fcm/send/dGhpcyBpcyBh:APA91bE","keys":{"auth":"BTBZMqHH6r4Tts7J_aSIgg","p256dh":"BCVx"}}"#
        #expect(TokenMask.mask(subscription) == "fcm.googleapis.com/dGhpcyBp…")
    }

    /// A request's URL: the APNs token in its path, a Web Push endpoint's id (the endpoint is
    /// the subscription's address); other URLs as they are.
    @Test func urlsShowNoTokenAndNoWholeEndpoint() {
        let apnsToken = String(repeating: "ab", count: 32)
        #expect(TokenMask.maskURL("https://api.push.apple.com/3/device/\(apnsToken)", token: apnsToken) == "https://api.push.apple.com/3/device/abababab…")
        let subscription = #"{"endpoint":"https://fcm.googleapis.com/fcm/send/dGhpcyBpcyBh:APA91bE","keys":{"auth":"BTBZMqHH6r4Tts7J_aSIgg","p256dh":"BCVx"}}"#
        #expect(TokenMask.maskURL("https://fcm.googleapis.com/fcm/send/dGhpcyBpcyBh:APA91bE", token: subscription)
            == "https://fcm.googleapis.com/fcm/send/dGhpcyBp…")
        #expect(TokenMask.maskURL("https://fcm.googleapis.com/v1/projects/p/messages:send", token: "fcm-registration-token")
            == "https://fcm.googleapis.com/v1/projects/p/messages:send")
    }
}
