import Foundation
import FuzzDriver
import PushPipeCore

/// The hand-written JSON parser reads untrusted bodies through unsafe pointers: under
/// AddressSanitizer, any input must neither crash nor touch memory it does not own. And what it
/// accepts, its writer writes back as text it parses to the same value (the store and the
/// webhooks write values the parser read).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Data(bytes: start, count: count)
    guard let value = try? JSON.parse(bytes) else { return 0 }
    let text = value.compactText
    guard let again = try? JSON.parse(text) else {
        fatalError("the parser rejects what its writer wrote: \(text)")
    }
    guard sameValue(again, value) else { fatalError("a round trip changed the value: \(text)") }
    return 0
}

/// Equal as JSON values: a number is a number, whether it was read as an integer or not
/// (`-2.5e10` is written `-25000000000` and read back as an integer).
func sameValue(_ a: JSON, _ b: JSON) -> Bool {
    switch (a, b) {
    case (.int(let x), .double(let y)), (.double(let y), .int(let x)): return Double(x) == y
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(sameValue)
    case (.object(let x), .object(let y)): return x.count == y.count && x.allSatisfy { key, value in y[key].map { sameValue(value, $0) } ?? false }
    default: return a == b
    }
}

/// SwiftPM's entry point for this executable: libFuzzer's driver, running the target above.
@_cdecl("fuzz_json_main")
public func fuzzJSONMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, size in fuzzJSON(start, size) }
}
