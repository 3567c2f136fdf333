import ArgumentParser
import Foundation
import PushPipeCore

/// `pushpipe events show ID`: what became of an event, read from the store every daemon of a
/// group shares, so it answers whichever daemon took the event.
struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "What became of events, from the store.",
        subcommands: [Show.self]
    )

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Print an event's status: its state and each recipient's outcome (tokens masked)."
        )

        @Argument(help: "The event id (the `id` of its 202 answer).")
        var id: String

        @Option(name: .long, help: "Only this pipeline.")
        var pipeline: String?

        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var options: ConfigurationOptions

        func run() async throws {
            let records = try await storeOptions.withStore(logger: options.makeLogger()) { store in
                try await store.eventStatus(eventID: id, pipeline: pipeline)
            }
            guard !records.isEmpty else {
                FileHandle.standardError.write(Data("pushpipe: no event \(id)\(pipeline.map { " in pipeline \($0)" } ?? "")\n".utf8))
                throw ExitCode(1)
            }
            let shown = records.map(\.statusJSON)
            print(String(decoding: (shown.count == 1 ? shown[0] : .array(shown)).serialized(pretty: true), as: UTF8.self))
        }
    }
}
