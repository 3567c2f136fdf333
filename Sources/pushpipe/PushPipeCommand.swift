import ArgumentParser
import Foundation
import Logging
import PushPipeApps
import PushPipeCore
import PushPipePlugins
import PushPipeStages

@main
struct PushPipeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushpipe",
        abstract: "Push notifications as YAML pipelines: source → filters → renderer → transport.",
        version: BuildInfo.version,
        subcommands: [
            RunCommand.self, ValidateCommand.self, DryRunCommand.self, TestCommand.self, StagesCommand.self, SchemaCommand.self, SimulateCommand.self,
            TapCommand.self, ProbeCommand.self, VAPIDCommand.self, APNsCommand.self,
            EventsCommand.self, DeadLettersCommand.self, OpenAPICommand.self,
        ],
        defaultSubcommand: RunCommand.self
    )

    /// Every stage type and route kind this build has: the generic ones and the apps'.
    static var stages: [any Registrable] { BuiltinStages.all + AppStages.all }

    /// Registers the stages before any command runs, so that every command masks tokens as
    /// their formats say (`TokenMask`), whether or not it reads a pipeline (`events show`).
    static func main() async {
        _ = StageRegistry(stages)
        await main(nil)
    }
}

/// Options every command that reads configuration shares.
struct ConfigurationOptions: ParsableArguments {
    @Option(
        name: .long,
        help: "Folder of plugin folders (each with a plugin.yaml). Default: ./plugins.d, else the plugins.d beside the pipelines folder."
    )
    var plugins: String?

    /// `--plugins`, or `plugins.d` in the working directory, or the one beside the pipelines'
    /// folder (`pushpipe validate ~/deploy/pipelines` finds `~/deploy/plugins.d`).
    func pluginsDirectory(forPipelinesIn paths: [String]) -> String {
        if let plugins { return plugins }
        let fileManager = FileManager.default
        if fileManager.fileExists(atPath: "plugins.d") { return "plugins.d" }
        for path in paths {
            var isDirectory: ObjCBool = false
            guard fileManager.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            let folder = isDirectory.boolValue ? path : (path as NSString).deletingLastPathComponent
            let beside = ((folder.isEmpty ? "." : folder) as NSString).deletingLastPathComponent
            let candidate = ((beside.isEmpty ? "." : beside) as NSString).appendingPathComponent("plugins.d")
            if fileManager.fileExists(atPath: candidate) { return candidate }
        }
        return "plugins.d"
    }

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String?

    @Option(
        name: .long,
        help: "Log lines as text or json (one object per line, with pipeline, stage, event and masked token). Also PUSHPIPE_LOG_FORMAT."
    )
    var logFormat: LogFormat?

    enum LogFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    func makeLogger(label: String = "pushpipe") -> Logger {
        let format = logFormat ?? ProcessInfo.processInfo.environment["PUSHPIPE_LOG_FORMAT"].flatMap(LogFormat.init) ?? .text
        Logging.bootstrapOnce(json: format == .json)
        var logger = Logger(label: label)
        let level = logLevel ?? ProcessInfo.processInfo.environment["PUSHPIPE_LOG_LEVEL"] ?? "info"
        logger.logLevel = Logger.Level(rawValue: level) ?? .info
        return logger
    }

    /// One pipeline, by file path or by name in `directory`; prints the diagnostics and exits 1 when invalid.
    func loadPipeline(_ nameOrFile: String, in directory: String, dryRun: Bool) async throws -> PipelineDefinition {
        let file = FileManager.default.fileExists(atPath: nameOrFile) ? nameOrFile : "\(directory)/\(nameOrFile).yaml"
        let result = await loader(dryRun: dryRun).load(pipelineFiles: [file], pluginsDirectory: pluginsDirectory(forPipelinesIn: [file]))
        guard !result.diagnostics.hasErrors, let definition = result.pipelines.first else {
            printDiagnostics(result.diagnostics)
            throw ExitCode(1)
        }
        return definition
    }

    func loader(dryRun: Bool) -> ConfigLoader {
        ConfigLoader(
            builtins: PushPipeCommand.stages,
            interpolation: EnvironmentInterpolation(environment: ProcessInfo.processInfo.environment, allowsUndefined: dryRun),
            pluginHost: ChildProcessPluginHost()
        )
    }
}

enum Logging {
    nonisolated(unsafe) private static var bootstrapped = false
    static func bootstrapOnce(json: Bool) {
        guard !bootstrapped else { return }
        bootstrapped = true
        if json {
            LoggingSystem.bootstrap { label in JSONLogHandler(label: label) }
        } else {
            LoggingSystem.bootstrap { label in StreamLogHandler.standardError(label: label) }
        }
    }
}

func printDiagnostics(_ diagnostics: [Diagnostic]) {
    for diagnostic in diagnostics { FileHandle.standardError.write(Data("\(diagnostic)\n".utf8)) }
}
