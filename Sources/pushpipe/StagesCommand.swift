import ArgumentParser
import Foundation
import PushPipeCore

struct StagesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stages", abstract: "List stage types and route actions with their keys.")

    @OptionGroup var options: ConfigurationOptions

    @Flag(name: .long, help: "Print the Markdown reference (docs/stages.md) instead.")
    var markdown = false

    func run() async throws {
        let result = await options.loader(dryRun: true).load(
            pipelineFiles: [],
            pluginsDirectory: options.pluginsDirectory(forPipelinesIn: ["pipelines"])
        )
        printDiagnostics(result.diagnostics)
        if markdown {
            print(StageReference.markdown(registry: result.registry), terminator: "")
            return
        }
        for kind in StageKind.allCases {
            print("\(kind.rawValue)s:")
            for descriptor in result.registry.all(kind: kind) {
                let origin = if case .plugin(let directory) = descriptor.origin { " (plugin: \(directory))" } else { "" }
                print("  \(descriptor.type)\(origin) — \(descriptor.summary)")
                printKeys(descriptor.schema)
            }
            print("")
        }
        print("route actions (routes: [{action: ..., path: ..., method: ..., auth: ...}]):")
        for action in result.registry.routeActions {
            print("  \(action.name) (\(action.defaultMethod.isEmpty ? "its own routes" : "default \(action.defaultMethod)")) — \(action.summary)")
            printKeys(action.schema)
        }
    }

    func printKeys(_ schema: Schema) {
        for key in schema.keys {
            let requirement = key.required ? "required" : key.defaultValue.map { "default \($0.compactText)" } ?? "optional"
            print("      \(key.name) (\(key.type.name)\(key.rangeText.map { ", \($0)" } ?? ""); \(requirement)): \(key.doc)")
        }
    }
}
