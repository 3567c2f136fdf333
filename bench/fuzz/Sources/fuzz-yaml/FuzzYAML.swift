import Dispatch
import Foundation
import FuzzDriver
import PushPipeCore

/// The pipeline loader reads files users write: whatever bytes a file holds, loading it must
/// not crash, and every diagnostic must point into the file (line and column from 1), since an
/// error without a place is one nobody can fix. Only the core's registry (no built-in stages):
/// the YAML, the schema validation and the builder's checks are what is fuzzed.
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushpipe-fuzz-yaml-\(getpid())").path
let file = directory + "/pipeline.yaml"
let loader = ConfigLoader(builtins: [], interpolation: EnvironmentInterpolation(environment: [:]))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzYAML(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    FileManager.default.createFile(atPath: file, contents: Data(bytes: start, count: count))
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var diagnostics: [Diagnostic] = []
    Task {
        diagnostics = await loader.load(pipelineFiles: [file], pluginsDirectory: nil).diagnostics
        done.signal()
    }
    done.wait()
    for diagnostic in diagnostics where diagnostic.location.file == file {
        guard diagnostic.location.line >= 1, diagnostic.location.column >= 1 else {
            fatalError("a diagnostic without a place: \(diagnostic)")
        }
    }
    return 0
}

/// SwiftPM's entry point for this executable: libFuzzer's driver, running the target above.
@_cdecl("fuzz_yaml_main")
public func fuzzYAMLMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, size in fuzzYAML(start, size) }
}
