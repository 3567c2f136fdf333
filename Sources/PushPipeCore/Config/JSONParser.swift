/// A strict JSON parser over UTF-8 bytes. `JSONDecoder` into an enum guesses each value's
/// type by trying and failing, which costs an error per guess; this reads each value once,
/// keeps integers exact, reports the byte offset of a problem, and bounds nesting so hostile
/// input cannot exhaust the stack.
struct JSONParser {
    /// Nesting allowed in this parse.
    var maximumDepth = JSON.storedDepth

    /// The document, valid only during `parse`: reading through a pointer leaves out the bounds
    /// checks an array repeats at every byte (each read is guarded by `index < bytes.count`).
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    func failure(_ reason: String) -> JSONParseError {
        JSONParseError(reason: "\(reason) at byte \(index)")
    }

    mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 { index += 1 }
    }

    mutating func value() throws -> JSON {
        skipWhitespace()
        guard index < bytes.count else { throw failure("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("unexpected character '\(Character(UnicodeScalar(bytes[index])))'")
        }
    }

    private mutating func literal(_ text: StaticString, _ value: JSON) throws -> JSON {
        let count = text.utf8CodeUnitCount
        guard index + count <= bytes.count,
            text.withUTF8Buffer({ expected in
                (0..<count).allSatisfy { expected[$0] == bytes[index + $0] }
            })
        else { throw failure("invalid literal") }
        index += count
        return value
    }

    mutating func nest() throws {
        depth += 1
        guard depth <= maximumDepth else { throw failure("nested deeper than \(maximumDepth) levels") }
    }

    private mutating func object() throws -> JSON {
        var members: [String: JSON] = [:]
        try walkObject { parser, key in members[try parser.decodedKey(key)] = try parser.value() }
        return .object(members)
    }

    private mutating func array() throws -> JSON {
        var elements: [JSON] = []
        try walkArray { parser in elements.append(try parser.value()) }
        return .array(elements)
    }

    mutating func string() throws -> String {
        index += 1
        let start = index
        // Fast path: no escapes.
        while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") {
            guard bytes[index] >= 0x20 else { throw failure("control character in a string") }
            index += 1
        }
        guard index < bytes.count else { throw failure("unterminated string") }
        if bytes[index] == UInt8(ascii: "\"") {
            defer { index += 1 }
            return try decodeUTF8(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        }
        var scalars: [UInt8] = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return try scalars.withUnsafeBufferPointer { try decodeUTF8($0) }
            }
            if byte < 0x20 { throw failure("control character in a string") }
            guard byte == UInt8(ascii: "\\") else {
                scalars.append(byte)
                index += 1
                continue
            }
            index += 1
            guard index < bytes.count else { throw failure("unterminated escape") }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""): scalars.append(0x22)
            case UInt8(ascii: "\\"): scalars.append(0x5C)
            case UInt8(ascii: "/"): scalars.append(0x2F)
            case UInt8(ascii: "b"): scalars.append(0x08)
            case UInt8(ascii: "f"): scalars.append(0x0C)
            case UInt8(ascii: "n"): scalars.append(0x0A)
            case UInt8(ascii: "r"): scalars.append(0x0D)
            case UInt8(ascii: "t"): scalars.append(0x09)
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800...0xDBFF).contains(code) {
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw failure("unpaired surrogate")
                    }
                    index += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw failure("unpaired surrogate") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(code) {
                    throw failure("unpaired surrogate")
                }
                guard let scalar = Unicode.Scalar(code) else { throw failure("invalid \\u escape") }
                scalars.append(contentsOf: Array(String(Character(scalar)).utf8))
            default:
                throw failure("invalid escape")
            }
        }
        throw failure("unterminated string")
    }

    private mutating func hex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("short \\u escape") }
        var value: UInt32 = 0
        for byte in bytes[index..<index + 4] {
            value <<= 4
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value |= UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value |= UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value |= UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("invalid \\u escape")
            }
        }
        index += 4
        return value
    }

    /// ASCII needs no validation (and the generic validation looks up type metadata per call).
    func decodeUTF8(_ text: UnsafeBufferPointer<UInt8>) throws -> String {
        if text.allSatisfy({ $0 < 0x80 }) { return String(decoding: text, as: UTF8.self) }
        guard let string = String(validating: text, as: UTF8.self) else { throw failure("invalid UTF-8") }
        return string
    }

    private mutating func number() throws -> JSON {
        let start = index
        let isInteger = try scanNumber()
        // Up to 18 digits cannot overflow an Int64: no text is made for the common case.
        let negative = bytes[start] == UInt8(ascii: "-")
        if isInteger, index - start - (negative ? 1 : 0) <= 18 {
            var value: Int64 = 0
            for byte in bytes[(negative ? start + 1 : start)..<index] { value = value * 10 + Int64(byte - UInt8(ascii: "0")) }
            return .int(negative ? -value : value)
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let value = Int64(text) { return .int(value) }
        guard let value = Double(text), value.isFinite else { throw failure("invalid number '\(text)'") }
        return .double(value)
    }

    /// Moves past a number, checking JSON's grammar (no leading zeros, no bare '-', no '.5' or
    /// '5.'), and says whether it is an integer.
    mutating func scanNumber() throws -> Bool {
        let start = index
        func isDigit(_ at: Int) -> Bool { at < bytes.count && bytes[at] >= UInt8(ascii: "0") && bytes[at] <= UInt8(ascii: "9") }
        func digits() throws {
            guard isDigit(index) else {
                throw failure("invalid number '\(String(decoding: bytes[start..<min(index + 1, bytes.count)], as: UTF8.self))'")
            }
            while isDigit(index) { index += 1 }
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        if index < bytes.count, bytes[index] == UInt8(ascii: "0") { index += 1 } else { try digits() }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            try digits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            try digits()
        }
        return isInteger
    }
}
