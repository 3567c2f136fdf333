import ArgumentParser
import Foundation
import PushPipeCore
import PushPipeHTTP

/// `pushpipe openapi > openapi.json`: the routes the pipelines declare, as OpenAPI 3.1, for app
/// developers' client generators and for contract tests against a running daemon.
struct OpenAPICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "openapi", abstract: "Print the OpenAPI 3.1 document of the pipelines' routes.")

    @Argument(help: "Pipeline files or folders.")
    var paths: [String] = ["pipelines"]

    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        // Undefined variables (secrets) are allowed: the document names no secret.
        let result = await options.loader(dryRun: true).load(
            pipelineFiles: ConfigLoader.pipelineFiles(in: paths),
            pluginsDirectory: options.pluginsDirectory(forPipelinesIn: paths)
        )
        if result.diagnostics.hasErrors {
            printDiagnostics(result.diagnostics)
            throw ExitCode(1)
        }
        print(OpenAPIDocument.make(result.pipelines).prettyText)
    }
}
