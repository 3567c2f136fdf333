import Crypto
import Foundation
import PushPipeCore
import Testing

@testable import PushPipeStages

/// RFC 8291 Appendix A, byte for byte: the same keys and salt must give the RFC's body.
@Suite struct WebPushEncryptionTests {
    static func bytes(_ base64URL: String) -> Data { Data(base64URLEncoded: base64URL)! }

    static let plaintext = bytes("V2hlbiBJIGdyb3cgdXAsIEkgd2FudCB0byBiZSBhIHdhdGVybWVsb24")
    static let senderPrivate = bytes("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")
    static let senderPublic = bytes("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
    static let userAgentPublic = bytes("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
    static let salt = bytes("DGv6ra1nlYgDCS1FRnbzlw")
    static let authSecret = bytes("BTBZMqHH6r4Tts7J_aSIgg")
    static let body = bytes(
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
    )

    @Test func theRFCsExampleEncryptsToTheRFCsBody() throws {
        let senderKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.senderPrivate)
        #expect(senderKey.publicKey.x963Representation == Self.senderPublic)
        let encryption = try WebPushEncryption(p256dh: Self.userAgentPublic, auth: Self.authSecret)
        let (key, nonce) = try encryption.contentKey(senderKey: senderKey, senderPublic: senderKey.publicKey.x963Representation, salt: Self.salt)
        #expect(key.withUnsafeBytes { Data($0) } == Self.bytes("oIhVW04MRdy2XN9CiKLxTg"))
        #expect(Data(nonce) == Self.bytes("4h_95klXJ5E_qnoN"))
        let body = try encryption.encrypt(Self.plaintext, senderKey: senderKey, salt: Self.salt)
        #expect(body.count == 144)
        #expect(body == Self.body)
    }

    @Test func everyMessageHasAFreshKeyAndSalt() throws {
        let encryption = try WebPushEncryption(p256dh: Self.userAgentPublic, auth: Self.authSecret)
        let first = try encryption.encrypt(Self.plaintext)
        let second = try encryption.encrypt(Self.plaintext)
        #expect(first.prefix(16) != second.prefix(16), "salt")
        #expect(first[21..<86] != second[21..<86], "sender key")
        #expect(first.count == second.count)
    }

    /// RFC 8188's header holds 16 bytes of salt: any other length is an error, not a body no
    /// browser can read (nor a trap in the key derivation).
    @Test(arguments: [0, 15, 17, 65, 200]) func aSaltThatIsNot16BytesIsRefused(length: Int) throws {
        let encryption = try WebPushEncryption(p256dh: Self.userAgentPublic, auth: Self.authSecret)
        #expect(throws: (any Error).self) {
            try encryption.encrypt(Self.plaintext, senderKey: P256.KeyAgreement.PrivateKey(), salt: Data(count: length))
        }
    }

    @Test(arguments: [
        (Data([0x04] + Array(repeating: 1, count: 64)), Data(count: 16), "keys.p256dh"),  // not on the curve
        (Data(count: 65), Data(count: 16), "keys.p256dh"),
        (userAgentPublic.dropLast(), Data(count: 16), "keys.p256dh"),
        (userAgentPublic, Data(count: 15), "keys.auth"),
    ])
    func keysThatAreNotKeysAreRefused(_ p256dh: Data, _ auth: Data, _ field: String) {
        #expect { try WebPushEncryption(p256dh: p256dh, auth: auth) } throws: { ($0 as? WebPushEncryption.InvalidKey)?.field == field }
    }
}

extension WebPushEncryptionTests {
    /// A fresh sender key per message, and a fresh salt: two encryptions of one message differ
    /// in both, and each key is a usable point.
    @Test func everyMessageHasItsOwnSenderKeyAndSalt() throws {
        let first = WebPushEncryption.freshKeyAndSalt()
        let second = WebPushEncryption.freshKeyAndSalt()
        #expect(first.senderKey.rawRepresentation != second.senderKey.rawRepresentation)
        #expect(first.senderKey.publicKey.x963Representation.count == 65)
        #expect(first.salt.count == 16 && second.salt.count == 16)
        #expect(first.salt != second.salt)
        #expect(first.salt != first.senderKey.rawRepresentation.prefix(16), "the salt is not the key's bytes")
    }
}
