import ExtrasBase64
import Foundation

/// base64url without padding (RFC 4648 §5): how Web Push writes keys, salts and JWTs. Decoding
/// also takes padding at the end and the standard alphabet, as some subscription libraries write.
extension Data {
    public init?(base64URLEncoded text: some StringProtocol) {
        var bytes = Array(text.utf8)
        while bytes.last == UInt8(ascii: "=") { bytes.removeLast() }
        // Padding only at the end: the decoder would take "ab=c".
        guard !bytes.contains(UInt8(ascii: "=")) else { return nil }
        let options: Base64.DecodingOptions = [.omitPaddingCharacter, .base64UrlAlphabet]
        guard let decoded = (try? Base64.decode(bytes: bytes, options: options)) ?? (try? Base64.decode(bytes: bytes, options: .omitPaddingCharacter))
        else {
            return nil
        }
        self.init(decoded)
    }

    public func base64URLEncodedString() -> String {
        Base64.encodeToString(bytes: self, options: [.base64UrlAlphabet, .omitPaddingCharacter])
    }
}
