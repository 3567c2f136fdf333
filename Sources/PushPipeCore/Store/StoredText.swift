/// Text as both stores can keep it. PostgreSQL refuses NUL in `text` (SQLSTATE 22021) and its
/// `\u0000` escape in `jsonb` (22P05), which would make one provider answer fail every write of its
/// group commit; SQLite keeps NUL but every read stops at it. So each store passes the strings
/// it binds through here, whoever made them: a provider, a plugin, or a user's event body.
package enum StoredText {
    /// What stands for a character no store keeps, as UTF-8 decoding does for invalid bytes.
    package static let replacement: Unicode.Scalar = "\u{FFFD}"
    /// The most characters of free text (a delivery's reason, a provider's id) stored: the
    /// runtime cuts providers' reasons shorter already; this bounds whatever else gets there.
    package static let longestFreeText = 1000

    /// `text` with each NUL replaced and at most `limit` characters (Unicode scalars) kept,
    /// the cut marked with an ellipsis. The common case, nothing to change, costs one scan.
    package static func storable(_ text: String, limit: Int = .max) -> String {
        let clean = text.utf8.withContiguousStorageIfAvailable { bytes in
            bytes.count <= limit && !scan(UnsafeRawBufferPointer(bytes), stoppingAtHighBit: false)
        }
        if clean == true { return text }
        var result = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit { return result + "…" }
            result.unicodeScalars.append(scalar == "\0" ? replacement : scalar)
            count += 1
        }
        return result
    }

    /// Whether a store keeps `text` byte for byte (`storable` leaves it as it is, at any length):
    /// a user id it keeps otherwise is found under other bytes, so a read of many users
    /// cannot answer for it.
    package static func keepsAsIs(_ text: String) -> Bool {
        !text.utf8.contains(0)
    }

    /// Optional text as `storable` makes it.
    package static func storable(_ text: String?, limit: Int = .max) -> String? {
        text.map { storable($0, limit: limit) }
    }

    /// UTF-8 bytes (a serialized payload) as text a store keeps, or nil when they are already:
    /// invalid sequences and NUL become the replacement character.
    package static func repaired(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        // Plain ASCII without NUL, most payloads: nothing to decode.
        if !scan(bytes, stoppingAtHighBit: true) { return nil }
        var parser = Unicode.UTF8.ForwardParser()
        var input = bytes.makeIterator()
        var needsRepair = false
        parsing: while true {
            switch parser.parseScalar(from: &input) {
            case .valid(let encoded):
                if encoded.count == 1 && encoded.first == 0 {
                    needsRepair = true
                    break parsing
                }
            case .error:
                needsRepair = true
                break parsing
            case .emptyInput: break parsing
            }
        }
        guard needsRepair else { return nil }
        return Array(storable(String(decoding: bytes, as: UTF8.self)).utf8)
    }

    /// Whether `bytes` hold a NUL (or, `stoppingAtHighBit`, a byte that is not ASCII), eight
    /// bytes at a time: every string a store binds is scanned, most of them clean.
    static func scan(_ bytes: UnsafeRawBufferPointer, stoppingAtHighBit: Bool) -> Bool {
        let high: UInt64 = 0x8080_8080_8080_8080
        let ones: UInt64 = 0x0101_0101_0101_0101
        var index = 0
        while index + 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            // A zero byte sets the high bit of `(word - ones) & ~word` (exactly when there is one).
            if (word &- ones) & ~word & high != 0 || (stoppingAtHighBit && word & high != 0) { return true }
            index += 8
        }
        while index < bytes.count {
            if bytes[index] == 0 || (stoppingAtHighBit && bytes[index] >= 0x80) { return true }
            index += 1
        }
        return false
    }

    /// Serialized JSON with each `\u0000` escape (a NUL in one of its strings) made `\ufffd`,
    /// for PostgreSQL's `jsonb`: the only escape it refuses. Escapes are the only place a
    /// backslash appears in serialized JSON, so one scan finds them all.
    package static func storableJSON(_ serialized: String) -> String {
        var text = serialized
        let escapes = text.withUTF8 { bytes -> [Int] in
            var escapes: [Int] = []
            var index = 0
            while index < bytes.count {
                guard bytes[index] == UInt8(ascii: "\\") else {
                    index += 1
                    continue
                }
                if index + 5 < bytes.count, bytes[index + 1] == UInt8(ascii: "u"), bytes[index + 2] == UInt8(ascii: "0"),
                    bytes[index + 3] == UInt8(ascii: "0"), bytes[index + 4] == UInt8(ascii: "0"), bytes[index + 5] == UInt8(ascii: "0")
                {
                    escapes.append(index)
                }
                index += 2
            }
            return escapes
        }
        guard !escapes.isEmpty else { return serialized }
        var bytes = Array(text.utf8)
        for index in escapes { bytes.replaceSubrange((index + 2)...(index + 5), with: "fffd".utf8) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Dictionary where Key == String, Value == JSON {
    /// Values as stores keep them: rows of a key and its JSON text (settings, stages' values).
    package init(parsing rows: [(String, String)]) throws {
        self.init(try rows.map { ($0.0, try JSON.parse($0.1)) }, uniquingKeysWith: { _, last in last })
    }
}

extension Array where Element == [String: JSON] {
    /// Each of `users`' settings from rows of a user, a key and its JSON text (`settings(of:)`),
    /// a row matched to a user by the bytes the store keeps for the user (`stored`).
    package init(users: [String], rows: [(String, String, String)], stored: (String) -> String) throws {
        var byUser: [[UInt8]: [(String, String)]] = [:]
        for (user, key, value) in rows { byUser[[UInt8](user.utf8), default: []].append((key, value)) }
        self = try users.map { try [String: JSON](parsing: byUser[[UInt8](stored($0).utf8)] ?? []) }
    }
}
