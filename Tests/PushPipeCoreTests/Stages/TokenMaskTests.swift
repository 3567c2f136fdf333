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

    /// A request's URL: a token in its path masked; other URLs as they are.
    @Test func urlsShowNoToken() {
        let apnsToken = String(repeating: "ab", count: 32)
        #expect(
            TokenMask.maskURL("https://api.push.apple.com/3/device/\(apnsToken)", token: apnsToken) == "https://api.push.apple.com/3/device/abababab…"
        )
        #expect(
            TokenMask.maskURL("https://fcm.googleapis.com/v1/projects/p/messages:send", token: "fcm-registration-token")
                == "https://fcm.googleapis.com/v1/projects/p/messages:send"
        )
    }
}
