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

    /// The scan reads eight bytes at a time, then the rest one by one: a NUL or a byte that is
    /// not ASCII is found at every place, in every length, and none is found where there is none.
    @Test func theScanFindsEveryNULAndHighByteWherever() {
        for length in 0..<40 {
            let clean = [UInt8](repeating: UInt8(ascii: "x"), count: length)
            #expect(clean.withUnsafeBytes { StoredText.scan($0, stoppingAtHighBit: true) } == false)
            // 0x01 and 0x7F beside a would-be zero: the bit trick's neighbours, not NUL.
            let near = (0..<length).map { $0 % 2 == 0 ? UInt8(0x01) : UInt8(0x7F) }
            #expect(near.withUnsafeBytes { StoredText.scan($0, stoppingAtHighBit: true) } == false)
            for place in 0..<length {
                for (byte, highStops) in [(UInt8(0), true), (UInt8(0), false), (UInt8(0x80), true), (UInt8(0xFF), true)] {
                    var bytes = near
                    bytes[place] = byte
                    #expect(bytes.withUnsafeBytes { StoredText.scan($0, stoppingAtHighBit: highStops) }, "byte \(byte) at \(place) of \(length)")
                }
                var high = clean
                high[place] = 0xC3
                #expect(high.withUnsafeBytes { StoredText.scan($0, stoppingAtHighBit: false) } == false, "not ASCII is no NUL")
            }
        }
    }

    /// Only a NUL's escape changes: an escaped backslash followed by `u0000` is text, not a NUL.
    @Test func jsonbGetsNoNULEscape() throws {
        let serialized = JSON.object(["nul": .string("a\0b"), "text": .string(#"\u0000"#)]).compactText
        let storable = StoredText.storableJSON(serialized)
        #expect(try JSON.parse(storable) == ["nul": "a\u{FFFD}b", "text": .string(#"\u0000"#)])
        #expect(StoredText.storableJSON(#"{"a":"b"}"#) == #"{"a":"b"}"#)
    }
}
