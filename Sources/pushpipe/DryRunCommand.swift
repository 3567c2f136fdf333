import ArgumentParser
import Foundation
import PushPipeCore
import PushPipeSQLite

struct DryRunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dry-run",
        abstract: "Feed one event through a pipeline and print what each stage produced. Nothing is sent or stored."
    )

    @Argument(help: "Pipeline file, or the name of a pipeline in --pipelines.")
    var pipeline: String

    @Option(name: .long, help: "Event JSON file ({\"user\", \"body\", \"id\", \"time\"}), or - for standard input; without it the source runs once.")
    var event: String?

    @Option(name: .long, help: "Folder of pipeline files.")
    var pipelines = "pipelines"

    @Option(name: .long, help: "SQLite state file to read registrations and settings from (a copy is used).")
    var state = "var/pushpipe.sqlite"

    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        let logger = options.makeLogger()
        let definition = try await options.loadPipeline(pipeline, in: pipelines, dryRun: true)

        // Work on a copy of the state so nothing durable changes.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushpipe-dry-run-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let copy = "\(directory)/state.sqlite"
        if FileManager.default.fileExists(atPath: state) { try SQLiteStore.snapshot(of: state, to: copy) }
        let store = try SQLiteStore(path: copy)
        let context = StageContext(
            pipeline: definition.name,
            stage: "sources[0]",
            key: definition.sources.first?.key,
            store: store,
            logger: logger,
            mode: .dryRun
        )
        let inputs = try await events(for: definition, context: context)
        if inputs.isEmpty { print("the source has no event right now") }
        let processor = EventProcessor(definition: definition, store: store, logger: logger, mode: .dryRun)
        try await definition.withRunningStages(store: store, logger: logger, mode: .dryRun) {
            for input in inputs {
                print("event \(input.id) for \(input.user ?? "every user"):\n\(input.body.prettyText)\n")
                let report = await processor.process(input)
                print("result: \(report.summary)")
                for delivery in report.deliveries {
                    print("  \(delivery.tokenKind) token \(delivery.token) of \(delivery.user): rendered\n\(delivery.payload.prettyText)")
                }
            }
        }
        try await store.close()
    }

    /// The `--event` file, or one run of a source that can run once.
    func events(for definition: PipelineDefinition, context: StageContext) async throws -> [Event] {
        if let event {
            let data = event == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: event)
            guard let data else { throw ValidationError("cannot read \(event)") }
            return [try EventInput.event(from: try JSON.parse(data), pipeline: definition.name)]
        }
        guard let source = definition.sources.first(where: { $0.stage is any OneShotSource }) else {
            throw ValidationError(
                "the sources of \(definition.name) cannot run once (\(definition.sources.map(\.type).joined(separator: ", "))); pass --event FILE"
            )
        }
        return try await (source.stage as! any OneShotSource).eventsOnce(context: context.forStage(source.id, key: source.key))
    }
}
