import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// RFC 8291 message encryption: one `aes128gcm` record (RFC 8188) that only the subscribed
/// browser can read. Every message gets a fresh sender key pair and salt, as the RFC requires,
/// so the ECDH per message is the cost of Web Push.
public struct WebPushEncryption: Sendable {
    /// The browser's key (`keys.p256dh`, an uncompressed P-256 point) and secret (`keys.auth`).
    let userAgentPublicKey: P256.KeyAgreement.PublicKey
    /// The same key as the subscription wrote it (65 bytes): what the key derivation reads,
    /// without converting the point back each message.
    let userAgentKeyBytes: Data
    let authSecret: Data

    /// The record size written in the header: larger than any message, so there is one record.
    static let recordSize: UInt32 = 4096
    static let headerBytes = 16 + 4 + 1 + 65
    static let tagBytes = 16
    /// A push service must accept 4,096 bytes of body (RFC 8030 §7.2): the header, the
    /// plaintext, its delimiter and the tag.
    static let maximumPlaintextBytes = 4096 - headerBytes - 1 - tagBytes

    public struct InvalidKey: Error, CustomStringConvertible {
        public var field: String
        public var description: String { "\(field) is not a valid Web Push key" }
    }

    public init(p256dh: Data, auth: Data) throws(InvalidKey) {
        guard p256dh.count == 65, p256dh.first == 0x04,
            let key = try? P256.KeyAgreement.PublicKey(x963Representation: p256dh)
        else { throw InvalidKey(field: "keys.p256dh") }
        guard auth.count == 16 else { throw InvalidKey(field: "keys.auth") }
        userAgentPublicKey = key
        userAgentKeyBytes = p256dh
        authSecret = auth
    }

    /// The request body, under a fresh sender key and salt.
    public func encrypt(_ plaintext: Data) throws -> Data {
        let (senderKey, salt) = Self.freshKeyAndSalt()
        return try encrypt(plaintext, senderKey: senderKey, salt: salt)
    }

    /// The request body: header (salt, record size, sender key) then the sealed record.
    public func encrypt(_ plaintext: Data, senderKey: P256.KeyAgreement.PrivateKey, salt: Data) throws -> Data {
        // RFC 8188's header has room for 16 bytes of salt and no other length.
        guard salt.count == 16 else { throw CryptoKitError.incorrectParameterSize }
        // Converted once: each conversion of a point to bytes costs a field inversion.
        let senderPublic = senderKey.publicKey.x963Representation
        let (key, nonce) = try contentKey(senderKey: senderKey, senderPublic: senderPublic, salt: salt)
        var padded = plaintext
        padded.append(0x02)  // the last (and only) record's delimiter
        let sealed = try AES.GCM.seal(padded, using: key, nonce: nonce)
        var body = Data(capacity: Self.headerBytes + padded.count + Self.tagBytes)
        body.append(salt)
        withUnsafeBytes(of: Self.recordSize.bigEndian) { body.append(contentsOf: $0) }
        body.append(UInt8(senderPublic.count))
        body.append(senderPublic)
        body.append(sealed.ciphertext)
        body.append(sealed.tag)
        return body
    }

    /// RFC 8291 §3.3-3.4 and RFC 8188 §2.2: the content-encryption key and the nonce, each
    /// HKDF written out as its HMACs (every output fits one block of SHA-256).
    func contentKey(senderKey: P256.KeyAgreement.PrivateKey, senderPublic: Data, salt: Data) throws -> (SymmetricKey, AES.GCM.Nonce) {
        let shared = try senderKey.sharedSecretFromKeyAgreement(with: userAgentPublicKey)
        // PRK_key = HKDF-Extract(auth_secret, ecdh_secret); IKM = HKDF-Expand(PRK_key, key_info, 32).
        let keyPseudoRandomKey = HMACSHA256.authenticate(key: authSecret, message: shared)
        let inputKeyMaterial = keyPseudoRandomKey.withUnsafeBytes { key in
            HMACSHA256.authenticate(key: key) { info in
                Self.keyInfoLabel.withUnsafeBytes { info.update(bufferPointer: $0) }
                userAgentKeyBytes.withUnsafeBytes { info.update(bufferPointer: $0) }
                senderPublic.withUnsafeBytes { info.update(bufferPointer: $0) }
                Self.firstBlock.withUnsafeBytes { info.update(bufferPointer: $0) }
            }
        }
        // PRK = HKDF-Extract(salt, IKM); CEK and NONCE are the first bytes of one block each.
        let pseudoRandomKey = HMACSHA256.authenticate(key: salt, message: inputKeyMaterial)
        let key = HMACSHA256.authenticate(key: pseudoRandomKey, message: Self.contentKeyInfo)
        let nonce = HMACSHA256.authenticate(key: pseudoRandomKey, message: Self.nonceInfo)
        return (
            key.withUnsafeBytes { SymmetricKey(data: $0[..<16]) },
            try nonce.withUnsafeBytes { try AES.GCM.Nonce(data: $0[..<12]) }
        )
    }

    /// The labels of RFC 8291 and RFC 8188, each info with HKDF-Expand's block counter 1.
    static let keyInfoLabel = Array("WebPush: info\0".utf8)
    static let firstBlock: [UInt8] = [0x01]
    static let contentKeyInfo = Array("Content-Encoding: aes128gcm\0\u{1}".utf8)
    static let nonceInfo = Array("Content-Encoding: nonce\0\u{1}".utf8)

    /// A fresh sender key (a random scalar and its public point) and a 16-byte salt, from one
    /// draw of the system's generator: swift-crypto's random keys take a `getrandom` call per 8
    /// bytes (`SystemRandomNumberGenerator`), six a message. Its own key generation also runs
    /// BoringSSL's FIPS pairwise test on every key (an ECDSA signature and its verification),
    /// which cost more than the key agreement it is for; a scalar of 32 random bytes is below
    /// the group order but with probability 2⁻³², and drawn again then.
    public static func freshKeyAndSalt() -> (senderKey: P256.KeyAgreement.PrivateKey, salt: Data) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 48) { bytes in
            // The scalar leaves no copy behind in freed memory.
            defer { KeyMaterialWipe.wipe(bytes) }
            while true {
                fillWithSystemRandom(UnsafeMutableRawBufferPointer(bytes))
                if let key = try? P256.KeyAgreement.PrivateKey(
                    rawRepresentation: UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: bytes[..<32]))
                ) {
                    return (key, Data(bytes[32...]))
                }
            }
        }
    }

    /// The kernel's generator in one read (`getrandom` is not in Swift's Glibc module, nor
    /// `arc4random_buf` before glibc 2.36), or the standard library's where it cannot be opened.
    private static let urandom = open("/dev/urandom", O_RDONLY | O_CLOEXEC)

    private static func fillWithSystemRandom(_ buffer: UnsafeMutableRawBufferPointer) {
        #if canImport(Darwin)
        arc4random_buf(buffer.baseAddress!, buffer.count)
        #else
        var filled = 0
        while urandom >= 0, filled < buffer.count {
            let count = read(urandom, buffer.baseAddress! + filled, buffer.count - filled)
            if count > 0 { filled += count } else if count == 0 || errno != EINTR { break }
        }
        guard filled < buffer.count else { return }
        var system = SystemRandomNumberGenerator()
        for index in buffer.indices { buffer[index] = system.next() }
        #endif
    }
}
