import ArgumentParser
import Foundation
import PushPipeCore

struct TestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "test", abstract: "Run the pipelines' _test.yaml cases.")

    @Argument(help: "_test.yaml files or folders.")
    var paths: [String] = ["pipelines"]

    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        let logger = options.makeLogger()
        // Variables come from each test file's `env:` and the pipeline's defaults, never from
        // this shell: a pipeline test gives the same answer on every machine.
        let runner = PipelineTestRunner(
            builtins: PushPipeCommand.stages,
            pluginsDirectory: options.pluginsDirectory(forPipelinesIn: paths),
            logger: logger
        )
        var passed = 0
        var failed = 0
        for file in PipelineTestFile.files(in: paths) {
            switch await runner.run(testFile: file) {
            case .failure(let error):
                printDiagnostics(error.diagnostics)
                print("FAIL \(file): cannot load")
                failed += 1
            case .success(let results):
                for result in results {
                    if result.passed {
                        passed += 1
                        print("pass \(file): \(result.name)")
                    } else {
                        failed += 1
                        print("FAIL \(file): \(result.name)")
                        for failure in result.failures { print("  \(failure)") }
                    }
                }
            }
        }
        print("pipeline tests: \(passed) passed, \(failed) failed")
        if failed > 0 || passed == 0 { throw ExitCode(1) }
    }
}
