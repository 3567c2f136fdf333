import ArgumentParser
import Foundation
import PushPipeCore

/// `pushpipe schema > pipeline.schema.json`: what the YAML language server needs to check and
/// complete `pipelines/*.yaml` in an editor, plugins' stages included.
struct SchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "schema", abstract: "Print the JSON Schema (draft 2020-12) of pipeline files.")

    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        let result = await options.loader(dryRun: true).load(
            pipelineFiles: [],
            pluginsDirectory: options.pluginsDirectory(forPipelinesIn: ["pipelines"])
        )
        printDiagnostics(result.diagnostics)
        print(JSONSchemaGenerator.pipelineFileSchema(registry: result.registry).prettyText)
    }
}
