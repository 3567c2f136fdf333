/// Keys that timing filters store under, made of values events carry (a user id, a thread):
/// each part escaped so that no two lists of parts give one key (a newline inside a part is
/// not a separator), and a long part shortened to a prefix and a hash, so that a hostile
/// 64 KB value neither fills an index nor is refused by it.
enum StoredKey {
    static let longest = 200

    static func joined(_ parts: [String]) -> String {
        parts.map(part).joined(separator: "\n")
    }

    static func part(_ value: String) -> String {
        let escaped = value.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "\n", with: "%0A")
        guard escaped.utf8.count > longest else { return escaped }
        return String(escaped.prefix(60)) + "%#" + String(hash(value), radix: 16)
    }

    /// FNV-1a: the same for the same text in every process and version (no seed).
    static func hash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return hash
    }
}
