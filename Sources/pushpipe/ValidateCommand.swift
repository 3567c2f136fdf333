import ArgumentParser
import Foundation
import PushPipeCore

struct ValidateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "validate", abstract: "Validate pipeline files without running anything.")

    @Argument(help: "Pipeline files or folders.")
    var paths: [String] = ["pipelines"]

    @OptionGroup var options: ConfigurationOptions

    @Flag(name: .long, help: "Allow undefined environment variables, as --dry-run does.")
    var dryRun = false

    func run() async throws {
        let files = ConfigLoader.pipelineFiles(in: paths)
        let result = await options.loader(dryRun: dryRun).load(
            pipelineFiles: files,
            pluginsDirectory: options.pluginsDirectory(forPipelinesIn: paths)
        )
        for file in result.validFiles { print("ok \(file)") }
        for diagnostic in result.diagnostics { print("\(diagnostic)") }
        if result.diagnostics.hasErrors { throw ExitCode(1) }
    }
}
