import Testing

@testable import PushPipeCore

/// What the stores bind: NUL replaced, invalid UTF-8 repaired, free text bounded.
@Suite struct StoredTextTests {
    @Test func nulIsReplacedAndLongTextCut() {
        #expect(StoredText.storable("plain") == "plain")
        #expect(StoredText.storable("a\0b\0") == "a\u{FFFD}b\u{FFFD}")
        #expect(StoredText.storable("héllo wörld", limit: 5) == "héllo…")
    }

    @Test func invalidUTF8AndNULBytesAreRepaired() {
        #expect([UInt8]("ascii".utf8).withUnsafeBytes { StoredText.repaired($0) } == nil)
        #expect([UInt8]("ünï".utf8).withUnsafeBytes { StoredText.repaired($0) } == nil, "valid UTF-8 is kept as it is")
        #expect([UInt8]([0x61, 0xFF, 0x00]).withUnsafeBytes { StoredText.repaired($0) } == Array("a\u{FFFD}\u{FFFD}".utf8))
    }

    /// Only a NUL's escape changes: an escaped backslash followed by `u0000` is text, not a NUL.
    @Test func jsonbGetsNoNULEscape() throws {
        let serialized = JSON.object(["nul": .string("a\0b"), "text": .string(#"\u0000"#)]).compactText
        let storable = StoredText.storableJSON(serialized)
        #expect(try JSON.parse(storable) == ["nul": "a\u{FFFD}b", "text": .string(#"\u0000"#)])
        #expect(StoredText.storableJSON(#"{"a":"b"}"#) == #"{"a":"b"}"#)
    }
}
