import ArgumentParser
import Foundation
import PushPipe
import PushPipeStages

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run", abstract: "Run the daemon on the pipelines.")

    @Argument(help: "Pipeline files; all of --pipelines when none are given.")
    var pipelineFiles: [String] = []

    @Option(name: .long, help: "Folder of pipeline files.")
    var pipelines = "pipelines"

    @OptionGroup var options: ConfigurationOptions

    @Option(name: .long, help: "SQLite state file (the same as --store sqlite:PATH).")
    var state: String?

    @Option(name: .long, help: "Where state lives: sqlite:PATH (default sqlite:var/pushpipe.sqlite) or postgres://user:password@host:port/database[?sslmode=...]. Also PUSHPIPE_STORE.")
    var store: String?

    @Option(name: .long, help: "Address to listen on (HOST:PORT; port 0 picks a free one).")
    var listen = "127.0.0.1:8080"

    @Flag(name: .long, help: "Print the requests transports would send instead of sending; record nothing as delivered.")
    var dryRun = false

    func run() async throws {
        let logger = options.makeLogger()
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]) else {
            throw ValidationError("--listen must be HOST:PORT, e.g. 127.0.0.1:8080")
        }
        let paths = pipelineFiles.isEmpty ? [pipelines] : pipelineFiles
        let location: StoreLocation
        do {
            let chosen = store ?? state.map { "sqlite:\($0)" } ?? ProcessInfo.processInfo.environment["PUSHPIPE_STORE"] ?? "sqlite:var/pushpipe.sqlite"
            location = try StoreLocation(parsing: chosen)
        } catch {
            throw ValidationError("--store: \(error)")
        }
        let daemon = Daemon(
            options: .init(pipelinePaths: paths, pluginsDirectory: options.pluginsDirectory(forPipelinesIn: paths),
                           store: location, host: String(listen[..<colon]), port: port, mode: dryRun ? .dryRun : .live,
                           environment: ProcessInfo.processInfo.environment),
            builtins: BuiltinStages.all, logger: logger)
        do {
            try await daemon.run()
        } catch let error as ConfigurationError {
            printDiagnostics(error.diagnostics)
            FileHandle.standardError.write(Data("pushpipe: not starting: \(error.diagnostics.count) error(s)\n".utf8))
            throw ExitCode(1)
        }
    }
}
