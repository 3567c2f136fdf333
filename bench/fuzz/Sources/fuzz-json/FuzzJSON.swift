import Foundation
import FuzzDriver
import PushPipeCore

/// The hand-written JSON parser reads untrusted bodies through unsafe pointers: under
/// AddressSanitizer, any input must neither crash nor touch memory it does not own.
///
/// It must read JSON as Foundation's `JSONSerialization` does: the same value where both
/// accept, and a refusal where Foundation refuses (RFC 8259), except where they knowingly
/// differ (`JSONDifferences`). And what it accepts, its writer writes back as text it parses to
/// the same value (the store and the webhooks write values the parser read).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Data(bytes: start, count: count)
    let ours = try? JSON.parse(bytes)
    let foundation = (try? JSONSerialization.jsonObject(with: bytes, options: [.fragmentsAllowed])).map(JSONDifferences.value(ofFoundation:))
    switch (ours, foundation) {
    case (let value?, let expected??):
        guard sameValue(value, expected, numbers: JSONDifferences.sameNumber) else {
            fatalError("read differently: \(value.compactText) vs Foundation's \(expected.compactText)")
        }
    case (let value?, nil), (let value?, .some(nil)):
        guard let difference = JSONDifferences.acceptedOnlyByUs(bytes, value) else {
            fatalError("accepted what Foundation refuses: \(String(decoding: bytes, as: UTF8.self).debugDescription)")
        }
        _ = difference
    case (nil, _?):
        guard JSONDifferences.refusedOnlyByUs(bytes) != nil else {
            fatalError("refused what Foundation accepts: \(String(decoding: bytes, as: UTF8.self).debugDescription)")
        }
    case (nil, nil):
        break
    }
    guard let value = ours else { return 0 }
    let text = value.compactText
    guard let again = try? JSON.parse(text) else {
        fatalError("the parser rejects what its writer wrote: \(text)")
    }
    guard sameValue(again, value) else { fatalError("a round trip changed the value: \(text)") }
    return 0
}

/// Equal as JSON values: a number is a number, whether it was read as an integer or not
/// (`-2.5e10` is written `-25000000000` and read back as an integer).
func sameValue(_ a: JSON, _ b: JSON, numbers: (Double, Double) -> Bool = { $0 == $1 }) -> Bool {
    switch (a, b) {
    case (.int(let x), .double(let y)), (.double(let y), .int(let x)): return numbers(Double(x), y)
    case (.double(let x), .double(let y)): return numbers(x, y)
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { sameValue($0, $1, numbers: numbers) }
    case (.object(let x), .object(let y)):
        return x.count == y.count && x.allSatisfy { key, value in y[key].map { sameValue(value, $0, numbers: numbers) } ?? false }
    default: return a == b
    }
}

/// SwiftPM's entry point for this executable: libFuzzer's driver, running the target above.
@_cdecl("fuzz_json_main")
public func fuzzJSONMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, size in fuzzJSON(start, size) }
}
