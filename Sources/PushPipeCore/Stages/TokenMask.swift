import Synchronization

/// Tokens as logs, taps, records and webhooks show them: the first characters and an ellipsis,
/// or what a token format says (`TokenFormat.mask`) for its tokens that begin alike (documents).
public enum TokenMask {
    /// The formats of the registries made in this process, which know their tokens' masks.
    private static let adopted = Mutex<[any TokenFormat]>([])

    /// Read outside the lock: a format's mask may mask a part of its token again.
    private static var formats: [any TokenFormat] { adopted.withLock { $0 } }

    /// Lets `mask` and `maskURL` show the tokens of `described` as their formats say.
    static func adopt(_ described: [any TokenFormat]) {
        adopted.withLock { formats in
            for format in described where !formats.contains(where: { $0.name == format.name }) { formats.append(format) }
        }
    }

    /// A request's URL as logs and taps may show it: the token in it masked, or as its format says.
    public static func maskURL(_ url: String, token: String) -> String {
        if !token.isEmpty, url.contains(token) { return url.replacingOccurrences(of: token, with: mask(token)) }
        return formats.lazy.compactMap { $0.maskURL(url, token: token) }.first ?? url
    }

    /// Walks only the kept characters: the token's length is never counted.
    public static func mask(_ token: String, keep: Int = 8) -> String {
        if let masked = formats.lazy.compactMap({ $0.mask(token) }).first { return masked }
        // Tokens are ASCII: then the kept characters are the first bytes (one character each,
        // and the next byte starts no combining sequence), with no grapheme walk.
        if case let ascii?? = token.utf8.withContiguousStorageIfAvailable({ bytes -> String? in
            guard bytes.count > keep, bytes[...keep].allSatisfy({ $0 < 0x80 }) else { return nil }
            return String(decoding: bytes[..<keep], as: UTF8.self) + "…"
        }) {
            return ascii
        }
        guard let end = token.index(token.startIndex, offsetBy: keep, limitedBy: token.endIndex), end != token.endIndex else {
            return String(repeating: "•", count: token.count)
        }
        return token[..<end] + "…"
    }
}
