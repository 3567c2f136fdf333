import Foundation
import PushPipeCore
import PushPipeStages
import Testing

/// Every file in `Fixtures/broken/` starts with `# expect: LINE:COLUMN CODE MESSAGE` lines:
/// the file must produce exactly those diagnostics, all of them, and no other error.
@Suite struct BrokenPipelineFixtureTests {
    static var fixtures: [String] {
        let directory = Bundle.module.resourcePath! + "/Fixtures/broken"
        return ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".yaml") }.sorted()
    }

    struct Expectation: CustomStringConvertible {
        var line: Int
        var column: Int
        var code: String
        var message: String
        var description: String { "\(line):\(column) \(code) \(message)" }
    }

    static func expectations(in text: String) -> [Expectation] {
        text.split(separator: "\n").filter { $0.hasPrefix("# expect: ") }.compactMap { line in
            let parts = line.dropFirst("# expect: ".count).split(separator: " ", maxSplits: 2)
            let position = parts[0].split(separator: ":").compactMap { Int($0) }
            guard parts.count == 3, position.count == 2 else { return nil }
            return Expectation(line: position[0], column: position[1], code: String(parts[1]), message: String(parts[2]))
        }
    }

    @Test func thereAreAtLeastTenBrokenFixtures() {
        #expect(Self.fixtures.count >= 10)
    }

    @Test(arguments: fixtures)
    func fixtureProducesItsExpectedDiagnostics(_ name: String) async throws {
        let file = Bundle.module.resourcePath! + "/Fixtures/broken/" + name
        let expected = Self.expectations(in: try String(contentsOfFile: file, encoding: .utf8))
        #expect(!expected.isEmpty, "fixture \(name) declares no expectation")
        let loader = ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
        let result = await loader.load(pipelineFiles: [file], pluginsDirectory: nil)
        let errors = result.diagnostics.errors
        #expect(errors.count == expected.count, "\(name): got \(errors.map(\.description))")
        for expectation in expected {
            let match = errors.first { diagnostic in
                diagnostic.location.line == expectation.line && diagnostic.location.column == expectation.column
                    && diagnostic.code.rawValue == expectation.code
                    && "\(diagnostic.keyPath.isEmpty ? "" : diagnostic.keyPath + ": ")\(diagnostic.message)".contains(expectation.message)
            }
            #expect(match != nil, "\(name): expected \(expectation), got \(errors.map(\.description))")
            #expect(match?.location.file == file)
        }
        #expect(result.pipelines.isEmpty, "a file with errors must not produce a runnable pipeline")
    }

    @Test func undefinedVariablesAreAllowedInDryRun() async throws {
        let file = Bundle.module.resourcePath! + "/Fixtures/broken/undefined-variable.yaml"
        let loader = ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:], allowsUndefined: true))
        let result = await loader.load(pipelineFiles: [file], pluginsDirectory: nil)
        #expect(result.diagnostics.errors.isEmpty)
        #expect(result.pipelines.count == 1)
    }
}
