import Foundation
import PushPipeCore
import Testing

@Suite struct JSONParserTests {
    @Test(arguments: [
        (#"{"a": 1, "b": [true, false, null], "c": "x"}"#, JSON.object(["a": 1, "b": [true, false, nil], "c": "x"])),
        ("1758474319701", .int(1_758_474_319_701)),
        ("-0.25", .double(-0.25)),
        ("1e3", .double(1000)),
        ("9223372036854775808", .double(9.223372036854775808e18)),
        (#""caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \n""#, .string("café 😀 \"q\" \\ / \n")),
        (" [ ] ", .array([])),
        ("{}", .object([:])),
        (#""😀 plain UTF-8""#, .string("😀 plain UTF-8")),
        ("-0", .int(0)),
        ("999999999999999999", .int(999_999_999_999_999_999)),
        ("-9223372036854775808", .int(Int64.min)),
        ("9223372036854775807", .int(Int64.max)),
        ("1E+2", .double(100)),
        ("[0, -1, 10.5e-1]", .array([0, -1, 1.05])),
        // Beyond 64 bits: the nearest Double, as Python's float reads it (Foundation's Decimal is a few units off).
        (String(repeating: "2", count: 66), .double(2.222222222222222e+65)),
    ])
    func parses(_ text: String, _ expected: JSON) throws {
        #expect(try JSON.parse(text) == expected)
    }

    /// A trailing comma is refused: RFC 8259 has none (Foundation's JSONSerialization accepts it).
    @Test(arguments: [
        "", "{", "[1,]", "{\"user\": \"alice\",}", "{\"a\":}", "01", "-", "1.", ".5", "1.e3", "tru", "nul", "\"unterminated", "\"bad \\x escape\"",
        "{\"a\" 1}", "[1 2]", "\"\\ud800\"", "\"tab\there\"", "1 2", "{'single': 1}", "NaN", "Infinity", "-01", "1e", "1e+", "[-]", "00", "truex",
        "{\"a\u{01}\": 1}",
    ])
    func rejects(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSON.parse(text) }
    }

    @Test func deepNestingIsAnErrorNotACrash() {
        let hostile = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONParseError.self) { try JSON.parse(hostile) }
    }

    @Test func invalidUTF8IsRejected() {
        #expect(throws: JSONParseError.self) { try JSON.parse(Data([0x22, 0xFF, 0xFE, 0x22])) }
    }

    @Test func roundTripsThroughTheSerializer() throws {
        let value: JSON = ["n": 1_758_474_319_701, "d": 0.5, "s": "line\nbreak \"q\"", "a": [1, nil, true], "o": [:]]
        #expect(try JSON.parse(value.serialized()) == value)
        #expect(try JSON.parse(value.serialized(pretty: true)) == value)
    }

    /// Skipped strings are stepped over eight bytes at a time: wherever an escape, a closing
    /// quote, a multi-byte character or a control character falls, a skipped string ends where
    /// it ends and a bad one is still rejected.
    @Test func skippedStringsEndWhereTheyEnd() throws {
        let selection = JSONSelection.members(["keep": .everything])
        for length in 0...20 {
            for position in 0...length {
                let plain = String(repeating: "x", count: length)
                let at = plain.index(plain.startIndex, offsetBy: position)
                for special in [#"\""#, #"\\"#, "é", "😀", #"\u0041"#, #"\"}, \"keep\": 0, \""#] {
                    let string = plain[..<at] + special + plain[at...]
                    let text = #"{"skip": ""# + string + #"", "keep": ""# + string + #""}"#
                    let whole = try JSON.parse(text)
                    #expect(try JSON.parse(Data(text.utf8), selecting: selection) == ["keep": whole["keep"]!], "\(text)")
                }
                let control = #"{"skip": ""# + plain[..<at] + "\u{01}" + plain[at...] + #"", "keep": 1}"#
                #expect(throws: JSONParseError.self, "\(control)") { try JSON.parse(Data(control.utf8), selecting: selection) }
                let unterminated = #"{"keep": 1, "skip": ""# + plain[..<at] + #"\""#
                #expect(throws: JSONParseError.self, "\(unterminated)") { try JSON.parse(Data(unterminated.utf8), selecting: selection) }
            }
        }
    }

    /// The writer copies the runs between escapes whole: whatever needs escaping, and wherever
    /// it falls (first, last, next to another), the text parses back to the same string.
    @Test func writtenStringsParseBackWhereverTheEscapesFall() throws {
        let specials = ["\"", "\\", "\n", "\r", "\t", "\u{01}", "\u{1F}", "é", "😀", "\"\"", "\\\""]
        for length in 0...6 {
            for position in 0...length {
                let plain = String(repeating: "x", count: length)
                let at = plain.index(plain.startIndex, offsetBy: position)
                for special in specials {
                    let string = plain[..<at] + special + plain[at...] + special
                    let written = JSON.string(string).compactText
                    #expect(try JSON.parse(written) == .string(string), "\(written)")
                    #expect(!written.utf8.contains(where: { $0 < 0x20 }), "control characters are escaped: \(written)")
                }
            }
        }
        #expect(JSON.string("{\"endpoint\":\"https://x\"}").compactText == #""{\"endpoint\":\"https://x\"}""#)
    }
}
