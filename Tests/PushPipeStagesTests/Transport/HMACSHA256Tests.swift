import Crypto
import Foundation
import Testing

@testable import PushPipeStages

/// The HMAC written on SHA-256 for RFC 8291's derivations: RFC 4231's vector, and the same
/// codes as swift-crypto's HMAC for every key length, shorter and longer than a block.
@Suite struct HMACSHA256Tests {
    @Test func rfc4231TestCase2() {
        let code = HMACSHA256.authenticate(key: Data("Jefe".utf8), message: Data("what do ya want for nothing?".utf8))
        #expect(Data(code).map { String(format: "%02x", $0) }.joined() == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    /// Up to a block the key is padded; past it, hashed first (RFC 2104).
    @Test func agreesWithSwiftCryptoForEveryKeyLength() {
        let message = Data((0..<200).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        for length in 0...(3 * HMACSHA256.blockBytes) {
            let key = Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) })
            let ours = HMACSHA256.authenticate(key: key, message: message)
            let theirs = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))
            #expect(Data(ours) == Data(theirs), "key of \(length) bytes")
        }
    }
}
