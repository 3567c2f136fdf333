/// Which parts of a document to build. A poller that reads one list out of a large document
/// (an OGS player's `/full`: profile, ratings, every game's full state) should not allocate a
/// string and a dictionary for everything else.
public struct JSONSelection: Sendable {
    struct Member: Sendable {
        let name: String
        /// The name's bytes, compared with a key's bytes without making the key a string.
        let utf8: [UInt8]
        let selection: JSONSelection
    }

    /// nil: the whole value.
    let wanted: [Member]?

    public static let everything = JSONSelection(wanted: nil)

    /// Only these members of an object (and, in an array, of each element); others are skipped.
    public static func members(_ members: [String: JSONSelection]) -> JSONSelection {
        JSONSelection(wanted: members.map { Member(name: $0.key, utf8: Array($0.key.utf8), selection: $0.value) })
    }
}

extension JSONParser {
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>, selecting selection: JSONSelection, maximumDepth: Int = JSON.storedDepth) throws -> JSON {
        var parser = JSONParser(bytes)
        parser.maximumDepth = maximumDepth
        let value = try parser.selectedValue(selection)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.failure("unexpected data after the JSON value") }
        return value
    }

    mutating func selectedValue(_ selection: JSONSelection) throws -> JSON {
        guard let wanted = selection.wanted else { return try value() }
        skipWhitespace()
        guard index < bytes.count else { throw failure("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            var members: [String: JSON] = [:]
            members.reserveCapacity(wanted.count)
            try walkObject { parser, key in
                // Keys are compared as bytes: a skipped member's key is never made a string.
                if let member = parser.member(key, in: wanted) {
                    members[member.name] = try parser.selectedValue(member.selection)
                } else {
                    try parser.skipValue()
                }
            }
            return .object(members)
        case UInt8(ascii: "["):
            var elements: [JSON] = []
            try walkArray { parser in elements.append(try parser.selectedValue(selection)) }
            return .array(elements)
        default:
            return try value()
        }
    }

    /// Checks a value's structure and moves past it without building it (a skipped string's
    /// escapes are stepped over, not decoded).
    mutating func skipValue() throws {
        skipWhitespace()
        guard index < bytes.count else { throw failure("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): try walkObject { parser, _ in try parser.skipValue() }
        case UInt8(ascii: "["): try walkArray { parser in try parser.skipValue() }
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try scanNumber()
        default: _ = try value()
        }
    }

    /// Most of a skipped document is string bytes (names, chat, game data): they are stepped
    /// over eight at a time while none of the eight ends the string, escapes or is a control
    /// character, and one at a time around those that do.
    mutating func skipString() throws {
        index += 1
        while index < bytes.count {
            if index + 8 <= bytes.count,
                !Self.mayEndString(UInt64(littleEndian: UnsafeRawPointer(bytes.baseAddress! + index).loadUnaligned(as: UInt64.self)))
            {
                index += 8
                continue
            }
            let blockEnd = min(index + 8, bytes.count)
            while index < blockEnd {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return
                }
                guard byte >= 0x20 else { throw failure("control character in a string") }
                index += byte == UInt8(ascii: "\\") ? 2 : 1
            }
        }
        throw failure("unterminated string")
    }

    /// Whether any of a word's eight bytes is `"`, `\` or below 0x20 (the classic tests for a
    /// zero byte and for a byte less than n, which have no false negatives).
    static func mayEndString(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let found = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
        return found & 0x8080_8080_8080_8080 != 0
    }

    /// Calls `member` with each key's bytes as they stand between the quotes (escapes
    /// undecoded; see `decodedKey`), the parser standing before its value.
    mutating func walkObject(_ member: (inout JSONParser, Range<Int>) throws -> Void) throws {
        try walkContainer(closedBy: UInt8(ascii: "}"), "object") { parser in
            guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: "\"") else {
                throw parser.failure("expected a string key")
            }
            let keyStart = parser.index + 1
            try parser.skipString()
            let key = keyStart..<parser.index - 1
            parser.skipWhitespace()
            guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: ":") else { throw parser.failure("expected ':'") }
            parser.index += 1
            try member(&parser, key)
        }
    }

    /// A key as a string, escapes decoded and UTF-8 validated. `walkObject` found its end and
    /// checked it for control characters: only a key with escapes is read again.
    mutating func decodedKey(_ key: Range<Int>) throws -> String {
        guard bytes[key].contains(UInt8(ascii: "\\")) else { return try decodeUTF8(UnsafeBufferPointer(rebasing: bytes[key])) }
        let resume = index
        defer { index = resume }
        index = key.lowerBound - 1
        return try string()
    }

    /// The wanted member a key spells, if any (an escaped key is decoded first).
    func member(_ key: Range<Int>, in wanted: [JSONSelection.Member]) -> JSONSelection.Member? {
        let raw = UnsafeBufferPointer(rebasing: bytes[key])
        guard raw.contains(UInt8(ascii: "\\")) else {
            return wanted.first { $0.utf8.count == raw.count && $0.utf8.withUnsafeBufferPointer { $0.elementsEqual(raw) } }
        }
        var parser = self
        guard let name = try? parser.decodedKey(key) else { return nil }
        return wanted.first { $0.name == name }
    }

    mutating func walkArray(_ element: (inout JSONParser) throws -> Void) throws {
        try walkContainer(closedBy: UInt8(ascii: "]"), "array", element)
    }

    /// An object's or an array's brackets and commas, around `element` (which starts at the
    /// element, whitespace skipped); nesting is bounded here for both.
    private mutating func walkContainer(closedBy closer: UInt8, _ kind: String, _ element: (inout JSONParser) throws -> Void) throws {
        try nest()
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == closer {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            try element(&self)
            skipWhitespace()
            guard index < bytes.count else { throw failure("unterminated \(kind)") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == closer {
                index += 1
                return
            }
            throw failure("expected ',' or '\(Character(UnicodeScalar(closer)))'")
        }
    }
}
