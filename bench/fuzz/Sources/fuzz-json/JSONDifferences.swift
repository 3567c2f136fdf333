import Foundation
import PushPipeCore

/// Where pushpipe's parser and `JSONSerialization` knowingly part, each for a reason; anything
/// else the fuzzer finds is a bug in one of them.
enum JSONDifferences {
    /// Foundation's value as pushpipe's `JSON`; nil for what has no JSON form.
    static func value(ofFoundation any: Any) -> JSON? {
        switch any {
        case is NSNull: return .null
        case let text as String: return .string(text)
        case let number as NSNumber:
            switch String(cString: number.objCType) {
            case "c": return .bool(number.boolValue)
            case "d", "f": return .double(number.doubleValue)
            case "Q": return number.uint64Value <= UInt64(Int64.max) ? .int(Int64(number.uint64Value)) : .double(number.doubleValue)
            default: return .int(number.int64Value)
            }
        case let array as [Any]:
            var elements: [JSON] = []
            for element in array {
                guard let value = value(ofFoundation: element) else { return nil }
                elements.append(value)
            }
            return .array(elements)
        case let object as [String: Any]:
            var members: [String: JSON] = [:]
            for (key, element) in object {
                guard let value = value(ofFoundation: element) else { return nil }
                members[key] = value
            }
            return .object(members)
        default:
            return nil
        }
    }

    /// Foundation reads an integer beyond 64 bits as a `Decimal`, whose `Double` is not always
    /// the nearest one: `222…2` (66 digits) comes back 2.2222222222222217e+65, and `110201102`
    /// followed by 38 zeros 1.1020110200000006e+46, where pushpipe (Swift's `Double(String)`)
    /// and Python's `float` give 2.222222222222222e+65 and 1.10201102e+46. Numbers agree to a
    /// relative 1e-14 (a few units in the last place).
    static func sameNumber(_ x: Double, _ y: Double) -> Bool {
        x == y || (x.isFinite && y.isFinite && abs(x - y) <= 1e-14 * max(x.magnitude, y.magnitude))
    }

    /// Why pushpipe may accept this input that Foundation refuses, or nil.
    static func acceptedOnlyByUs(_ bytes: Data, _ value: JSON) -> String? {
        nil
    }

    /// Why pushpipe may refuse this input that Foundation accepts, or nil.
    static func refusedOnlyByUs(_ bytes: Data) -> String? {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { return "Foundation skips a UTF-8 byte order mark; a request body has none" }
        if bytes.prefix(4).contains(0) || bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) {
            return "Foundation also reads UTF-16 and UTF-32; JSON on the wire is UTF-8 (RFC 8259 §8.1)"
        }
        let scan = structure(of: bytes)
        if scan.deepest > 256 { return "pushpipe refuses nesting deeper than 256 levels; Foundation allows 512" }
        if scan.trailingComma { return "Foundation accepts a comma before ] or }, which RFC 8259 does not" }
        return nil
    }

    /// The deepest nesting, and whether a `,` comes right before a `]` or `}`, outside strings.
    static func structure(of bytes: Data) -> (deepest: Int, trailingComma: Bool) {
        var depth = 0
        var deepest = 0
        var inString = false
        var escaped = false
        var afterComma = false
        var trailingComma = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                afterComma = false
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                deepest = max(deepest, depth)
                afterComma = false
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
                if afterComma { trailingComma = true }
                afterComma = false
            case UInt8(ascii: ","): afterComma = true
            case 0x20, 0x09, 0x0A, 0x0D: break
            default: afterComma = false
            }
        }
        return (deepest, trailingComma)
    }
}
