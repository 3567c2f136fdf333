import Crypto
import Foundation

/// HMAC-SHA-256 (RFC 2104) on `SHA256` itself: swift-crypto's generic `HMAC` and `HKDF` make a
/// key object, arrays and digest copies per call, which cost more than the hashing in the five
/// derivations of a Web Push message.
enum HMACSHA256 {
    static let blockBytes = 64

    /// HMAC(key, message), the message fed to the inner hash by `message`. Every key RFC 8291
    /// derives fits one block; a longer one is hashed first, as RFC 2104 says.
    static func authenticate(key: UnsafeRawBufferPointer, _ message: (inout SHA256) -> Void) -> SHA256.Digest {
        if key.count > blockBytes {
            return SHA256.hash(data: key).withUnsafeBytes { authenticate(key: $0, message) }
        }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: blockBytes) { pad in
            // The padded key leaves no copy behind in freed memory.
            defer { KeyMaterialWipe.wipe(pad) }
            pad.update(repeating: 0x36)
            for index in key.indices { pad[index] = key[index] ^ 0x36 }
            var inner = SHA256()
            inner.update(bufferPointer: UnsafeRawBufferPointer(pad))
            message(&inner)
            let innerDigest = inner.finalize()
            for index in pad.indices { pad[index] ^= 0x36 ^ 0x5c }
            var outer = SHA256()
            outer.update(bufferPointer: UnsafeRawBufferPointer(pad))
            innerDigest.withUnsafeBytes { outer.update(bufferPointer: $0) }
            return outer.finalize()
        }
    }

    /// HMAC(key, message) for a key and message in contiguous bytes.
    static func authenticate(key: some ContiguousBytes, message: some ContiguousBytes) -> SHA256.Digest {
        key.withUnsafeBytes { key in
            message.withUnsafeBytes { message in authenticate(key: key) { $0.update(bufferPointer: message) } }
        }
    }
}
