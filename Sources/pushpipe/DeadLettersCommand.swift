import ArgumentParser
import Foundation
import PushPipeCore

/// `pushpipe dead-letters`: events that failed for good, kept with their input, to read,
/// replay once the cause is fixed (only to the recipients that did not get them) or drop.
struct DeadLettersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters",
        abstract: "List, show, replay or drop events that failed for good.",
        subcommands: [List.self, Show.self, Replay.self, Drop.self]
    )

    /// What every subcommand shares: where the store is and which pipeline.
    struct Selection: ParsableArguments {
        @Option(name: .long, help: "Only this pipeline.")
        var pipeline: String?

        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var options: ConfigurationOptions

        func withStore<Result>(_ body: (any Store) async throws -> Result) async throws -> Result {
            try await storeOptions.withStore(logger: options.makeLogger(), body)
        }

        /// The dead letter of that id, in one pipeline: an id in several needs `--pipeline`.
        func deadLetter(_ id: String, in store: any Store) async throws -> EventRecord {
            let found = try await store.eventRecords(eventID: id, pipeline: pipeline).records.filter { $0.state == .deadLetter }
            guard let record = found.first else {
                throw DeadLetterError(id: id, problem: "no dead letter \(id)\(pipeline.map { " in pipeline \($0)" } ?? "")")
            }
            guard found.count == 1 else {
                throw DeadLetterError(
                    id: id,
                    problem: "dead letter \(id) is in pipelines \(found.map(\.pipeline).joined(separator: ", ")): choose one with --pipeline"
                )
            }
            return record
        }

        /// Runs `body` on each id's dead letter; tells of those that fail and goes on, then
        /// exits with 1 if any did.
        func forEachDeadLetter(_ ids: [String], _ body: (EventRecord, any Store) async throws -> Void) async throws {
            let failures = try await withStore { store in
                var failures = 0
                for id in ids {
                    do {
                        try await body(try await deadLetter(id, in: store), store)
                    } catch let error as DeadLetterError {
                        FileHandle.standardError.write(Data("pushpipe: \(error.problem)\n".utf8))
                        failures += 1
                    }
                }
                return failures
            }
            if failures > 0 { throw ExitCode(1) }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The newest dead letters first.")

        @OptionGroup var selection: Selection

        @Option(name: .long, help: "Only those that failed at or after this time: ISO 8601, or an age such as 90m, 24h, 7d.")
        var since: String?

        @Option(name: .long, help: "At most this many.")
        var limit = 100

        @Flag(name: .long, help: "JSON, one array.")
        var json = false

        func run() async throws {
            let cutoff = try since.map { try DeadLettersCommand.time(since: $0) }
            let letters = try await selection.withStore { store in
                try await store.deadLetters(pipeline: selection.pipeline, since: cutoff, limit: limit)
            }
            if json {
                print(String(decoding: JSON.array(letters.map(\.statusJSON)).serialized(pretty: true), as: UTF8.self))
                return
            }
            for letter in letters {
                let failed = letter.recipients.filter(\.isUnresolved).count
                let recipients =
                    letter.recipients.isEmpty ? "before delivery" : "\(failed) of \(letter.recipients.count + letter.omittedRecipients) recipients"
                print(
                    "\(EventRecord.timestamp(letter.updatedAt))  \(letter.pipeline)  \(letter.eventID)  user=\(letter.user ?? "-")  "
                        + "\(recipients)  \(letter.reason ?? "")"
                )
            }
            if letters.isEmpty { FileHandle.standardError.write(Data("no dead letters\n".utf8)) }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A dead letter's status and the input a replay sends again.")

        @OptionGroup var selection: Selection

        @Argument(help: "The event id.")
        var id: String

        /// Taken as `list` takes it, so a script passes it to both: `show` prints JSON either way.
        @Flag(name: .long, help: "JSON (the default; taken as list takes it).")
        var json = false

        func run() async throws {
            let record = try await selection.withStore { store in try await selection.deadLetter(id, in: store) }
            var shown = record.statusJSON.objectValue ?? [:]
            shown["input"] = record.input.map { ["time": .string(EventRecord.timestamp($0.time)), "body": $0.body] }
            print(String(decoding: JSON.object(shown).serialized(pretty: true), as: UTF8.self))
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Queue dead letters again: a running daemon of their pipeline sends them, only to the recipients that did not get them."
        )

        @OptionGroup var selection: Selection

        @Argument(help: "Event ids.")
        var ids: [String]

        func run() async throws {
            try await selection.forEachDeadLetter(ids) { record, store in
                guard let input = record.input else {
                    throw DeadLetterError(id: record.eventID, problem: "dead letter \(record.eventID) kept no input to send")
                }
                var replay = QueuedEvent(
                    pipeline: record.pipeline,
                    source: QueuedEventIntake.replayKey,
                    eventID: record.eventID,
                    user: record.user,
                    time: input.time,
                    body: input.body,
                    lease: .seconds(-1)
                )
                replay.caller = record.caller
                replay.replayOf = record
                guard try await store.replayDeadLetter(replay) else { throw DeadLetterError.changed(record.eventID) }
                let devices = record.replayAddresses.map { "\($0.count) recipients" } ?? "every recipient"
                print("queued \(record.eventID) (pipeline \(record.pipeline)) for \(devices)")
            }
        }
    }

    struct Drop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove dead letters for good.")

        @OptionGroup var selection: Selection

        @Argument(help: "Event ids.")
        var ids: [String]

        func run() async throws {
            try await selection.forEachDeadLetter(ids) { record, store in
                guard try await store.pipeline(record.pipeline).dropDeadLetter(eventID: record.eventID) else {
                    throw DeadLetterError.changed(record.eventID)
                }
                print("dropped \(record.eventID) (pipeline \(record.pipeline))")
            }
        }
    }

    /// `--since`: a time, or an age back from now.
    static func time(since text: String, now: Date = Date()) throws -> Double {
        if let date = try? Date(text, strategy: .iso8601) { return date.timeIntervalSince1970 }
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        if let unit = text.last.flatMap({ units[$0] }), let amount = Double(text.dropLast()), amount >= 0 {
            return now.timeIntervalSince1970 - amount * unit
        }
        throw ValidationError("--since '\(text)': expected an ISO 8601 time (2026-11-25T10:00:00Z) or an age such as 90m, 24h, 7d")
    }
}

struct DeadLetterError: Error {
    var id: String
    var problem: String

    static func changed(_ id: String) -> DeadLetterError {
        DeadLetterError(id: id, problem: "dead letter \(id) changed meanwhile (replayed or dropped)")
    }
}
