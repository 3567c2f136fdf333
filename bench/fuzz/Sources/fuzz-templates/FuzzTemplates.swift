import Foundation
import FuzzDriver
import PushPipeCore
import PushPipeStages

/// Templates come from pipeline files and values from events. Most templates (text and
/// `{{name.path}}` tags, list-condition sections) are rendered by pushpipe's own interpolation
/// instead of swift-mustache, for speed; the two must agree on every template both take, for
/// any event. And no template or event may crash either.
///
/// An input is a template (the first line) and an event body (the rest, JSON; a fixed body
/// when it is not an object).
let fallbackBody: JSON = [
    "title": "Game 1", "user": ["name": "Ann", "id": 7], "games": [["name": "a"], ["name": "b"]], "one": [["name": "x"]],
    "none": [], "n": 3, "yes": true, "nothing": nil, "ratio": 0.5, "text": "<b>&\"'</b>",
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTemplates(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    let cut = data.firstIndex(of: UInt8(ascii: "\n")) ?? data.endIndex
    let template = String(decoding: data[..<cut], as: UTF8.self)
    let rest = cut < data.endIndex ? data[(cut + 1)...] : Data()
    let body = (try? JSON.parse(Data(rest))).flatMap { $0.objectValue != nil ? $0 : nil } ?? fallbackBody
    guard let compiled = try? JSONTemplate(compiling: .string(template), keyPath: "fuzz") else { return 0 }
    let context = TemplateContext(event: Event(id: "fuzz", pipeline: "fuzz", user: "u1", time: Date(timeIntervalSince1970: 0), body: body))
    let rendered = compiled.render(context)
    if case .interpolation(let parts, let mustache) = compiled {
        // Rendered by the interpolation where it can, by Mustache where it cannot: either way
        // what Mustache alone renders.
        let byMustache = JSONTemplate.text(mustache).render(context)
        guard rendered == byMustache else {
            fatalError(
                "interpolation and Mustache differ for \(template.debugDescription) (\(parts)): \(String(describing: rendered)) vs \(String(describing: byMustache))"
            )
        }
    }
    return 0
}

/// SwiftPM's entry point for this executable: libFuzzer's driver, running the target above.
@_cdecl("fuzz_templates_main")
public func fuzzTemplatesMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, size in fuzzTemplates(start, size) }
}
