import Foundation
import PushPipeCore
import Testing

/// base64url as subscriptions and JWTs write it, and what a hostile or sloppy writer sends.
@Suite struct Base64URLTests {
    @Test func roundTripsEveryLengthWithoutPadding() {
        for count in 0..<40 {
            let bytes = Data((0..<count).map { UInt8(($0 * 37 + 251) % 256) })
            let text = bytes.base64URLEncodedString()
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Data(base64URLEncoded: text) == bytes)
        }
    }

    @Test func takesPaddingAtTheEndAndTheStandardAlphabet() {
        #expect(Data(base64URLEncoded: "-_8") == Data([0xFB, 0xFF]))
        #expect(Data(base64URLEncoded: "-_8=") == Data([0xFB, 0xFF]))
        #expect(Data(base64URLEncoded: "+/8=") == Data([0xFB, 0xFF]), "a library that writes standard base64")
    }

    @Test(arguments: ["a", "ab=c", "a b", "ab*c", "é", "abc\u{0}"])
    func refusesWhatIsNotBase64(_ text: String) {
        #expect(Data(base64URLEncoded: text) == nil)
    }
}
