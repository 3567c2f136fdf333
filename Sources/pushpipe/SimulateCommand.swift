import ArgumentParser
import Foundation
import PushPipeCore
import PushPipeSQLite

/// Pong's simulation CLI: one notification through the same filters, transport and history as
/// the backend's events, whether or not the daemon is running (the store is shared).
struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Send one notification through a pipeline (Pong by default).",
        // `-h` is the title here, as in Pong's original tool; help is `--help` only.
        helpNames: [.long]
    )

    @Option(name: [.customShort("u"), .customLong("user")], help: "Recipient user id.")
    var user: String

    @Option(
        name: [.customShort("t"), .customLong("type")],
        help: "Notification type (upvote, comment, hot, top, leader, message, reply, violation, generic)."
    )
    var type = "generic"

    @Option(name: [.customShort("r"), .customLong("resource")], help: "Resource path: /posts/ID, /messages/ID, /stats, or / .")
    var resource: String?

    @Option(name: [.customShort("h"), .customLong("title")], help: "Title (header).")
    var title = "Pong"

    @Option(name: [.customShort("b"), .customLong("body")], help: "Body.")
    var body = ""

    @Option(name: .long, help: "Pipeline name or file.")
    var pipeline = "pong"

    @Option(name: .long, help: "Folder of pipeline files.")
    var pipelines = "pipelines"

    @Option(name: .long, help: "SQLite state file (the daemon's, so settings and tokens apply and history is recorded).")
    var state = "var/pushpipe.sqlite"

    @Flag(name: .long, help: "Print the request instead of sending it; record nothing.")
    var dryRun = false

    @OptionGroup var options: ConfigurationOptions

    static let knownTypes = ["upvote", "comment", "hot", "top", "leader", "message", "reply", "violation", "generic"]

    func run() async throws {
        let logger = options.makeLogger()
        let definition = try await options.loadPipeline(pipeline, in: pipelines, dryRun: dryRun)
        if !Self.knownTypes.contains(type) {
            FileHandle.standardError.write(
                Data("warning: type '\(type)' is not one of \(Self.knownTypes.joined(separator: ", ")); sending it anyway\n".utf8)
            )
        }
        var fields: [String: JSON] = ["user": .string(user), "type": .string(type), "title": .string(title), "body": .string(body)]
        fields["resource"] = resource.map(JSON.string)
        let event = Event(pipeline: definition.name, user: user, body: .object(fields))
        let store = try SQLiteStore(path: state)
        let mode: RunMode = dryRun ? .dryRun : .live
        let processor = EventProcessor(definition: definition, store: store, logger: logger, mode: mode)
        let report = try await definition.withRunningStages(store: store, logger: logger, mode: mode) { await processor.process(event) }
        try await store.close()
        switch report.status {
        case .delivered, .partial:
            for delivery in report.deliveries { print("\(delivery.outcome): \(delivery.providerID ?? delivery.reason ?? "")") }
            if report.status == .partial { throw ExitCode(1) }
        case .scheduled, .deferred, .batched:
            // Kept in the state: a daemon on it sends the event when it falls due.
            print(report.summary)
        case .filtered, .throttled, .capped, .noRecipients, .failed:
            print("not sent: \(report.status.rawValue)\(report.reason.map { " (\($0))" } ?? "")")
            for delivery in report.deliveries { print("\(delivery.outcome): \(delivery.reason ?? "")") }
            throw ExitCode(1)
        }
    }
}
