import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// The JSON Schema and `docs/stages.md` come from the stage registry; these tests hold them to
/// the shipped pipelines and to the committed file.
@Suite struct GeneratedReferenceTests {
    static let repository = SvenFlowTests.repository

    func pushpipe(_ arguments: [String], in directory: String) async throws -> (status: Int32, output: [String]) {
        try await DaemonProcess.run(arguments: arguments, directory: directory, environment: [:]) { process in
            (try await process.waitForExit(), process.standardOutput)
        }
    }

    @Test func docsStagesMarkdownIsUpToDate() async throws {
        let result = try await pushpipe(["stages", "--markdown"], in: Self.repository.path)
        #expect(result.status == 0)
        let generated = result.output.joined(separator: "\n") + "\n"
        let committed = try String(contentsOf: Self.repository.appendingPathComponent("docs/stages.md"), encoding: .utf8)
        #expect(generated == committed, "docs/stages.md is out of date: run `\(StageReference.regenerateCommand)`")
        // Each stage type appears once, plugins included.
        for type in ["ogs.poller", "dedupe.timestamp", "apns.live-activity", "fcm", "mute-words", "timing.window"] {
            #expect(committed.contains("### `\(type)`"), "\(type) is missing from docs/stages.md")
        }
    }

    /// An independent validator (Python's `jsonschema`, draft 2020-12) checks every shipped
    /// pipeline against `pushpipe schema`, and refuses a misspelled key, a bad type and values
    /// out of the daemon's ranges.
    @Test func everyShippedPipelineValidatesAgainstTheGeneratedSchema() async throws {
        let directory = try TemporaryDirectory("schema")
        defer { directory.remove() }
        let result = try await pushpipe(["schema", "--plugins", Self.repository.appendingPathComponent("plugins.d").path], in: directory.path)
        #expect(result.status == 0)
        try directory.write("pipeline.schema.json", result.output.joined(separator: "\n"))
        let pipelines = try FileManager.default.contentsOfDirectory(atPath: Self.repository.appendingPathComponent("pipelines").path)
            .filter { $0.hasSuffix(".yaml") && !$0.hasSuffix("_test.yaml") }.sorted()
        #expect(pipelines.count >= 5)
        let script = """
            import json, sys, yaml, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            validator = jsonschema.Draft202012Validator(schema)
            for path in sys.argv[2:]:
                document = yaml.safe_load(open(path))
                errors = list(validator.iter_errors(document))
                print(path, "ok" if not errors else "; ".join(e.json_path + ": " + e.message[:120] for e in errors))
                if path.endswith("pong.yaml"):
                    document["transport"]["key_pth"] = "x"
                    print("misspelled", len(list(validator.iter_errors(document))))
                    document = yaml.safe_load(open(path))
                    document["delivery"] = {"concurrency": "many"}
                    print("bad-type", len(list(validator.iter_errors(document))))
                    # Out of the range the daemon refuses: the schema refuses it too.
                    document["delivery"] = {"concurrency": 0, "fanout": 10001}
                    print("out-of-range", len(list(validator.iter_errors(document))))
                if document.get("renderer", {}).get("type") == "apns.alert" and "priority" not in document["renderer"]:
                    # A code no range states (APNs priorities 10, 5, 1): refused by the schema as by the daemon.
                    for priority in (7, 5):
                        document["renderer"]["priority"] = priority
                        print("priority", priority, len(list(validator.iter_errors(document))))
                    del document["renderer"]["priority"]
            """
        try directory.write("validate.py", script)
        guard (try? Self.python(["-c", "import jsonschema, yaml; print('yes')"]))?.last == "yes" else {
            // CI installs it (.ci/run); a developer machine without it skips, saying why.
            #expect(ProcessInfo.processInfo.environment["CI"] == nil, "python3 with jsonschema and PyYAML is required in CI")
            return
        }
        let output = try Self.python(
            [directory.file("validate.py"), directory.file("pipeline.schema.json")]
                + pipelines.map { Self.repository.appendingPathComponent("pipelines/\($0)").path }
        )
        for name in pipelines {
            #expect(output.contains { $0.hasSuffix("\(name) ok") }, "\(name): \(output.filter { $0.contains(name) })")
        }
        #expect(output.contains("misspelled 1"))
        #expect(output.contains("bad-type 1"))
        #expect(output.contains("out-of-range 2"), "the schema's ranges are the daemon's")
        #expect(output.contains("priority 7 1") && output.contains("priority 5 0"), "the schema's allowed values are the daemon's: \(output)")
    }

    static func python(_ arguments: [String]) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}

extension GeneratedReferenceTests {
    /// Every exported metric is documented for operators.
    @Test func everyMetricIsDocumented() throws {
        let operations = try String(contentsOf: Self.repository.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        for metric in Metric.allCases {
            #expect(operations.contains("`\(metric.rawValue)`"), "\(metric.rawValue) is missing from docs/operations.md")
        }
    }
}
