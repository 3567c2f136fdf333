import Foundation
import PushPipe
import Synchronization

/// One event per reply file written into a folder (Sven's `reply-sven` step).
///
/// Files present at startup are sent then; new ones as soon as they are complete. After
/// delivery a file moves to `sent/`, so a restart never sends it again; a malformed file
/// moves to `rejected/` with the reason logged. Names starting with `.` are ignored, so a
/// writer can create `.reply.tmp` and rename it into place; empty files wait for their writer.
struct ReplyFolderSource: Source, OneShotSource {
    static let summary = "Sends one event per JSON file written into a folder (inotify), then moves it to sent/."

    /// Keys:
    /// - `path` (string, required): the folder; created when missing; relative paths start at the working directory.
    /// - `required_fields` (list of strings; `[message_id, text]`): string fields a reply must have.
    /// - `id_field` (string; `message_id`): field used as the event id.
    struct Configuration: StageConfiguration {
        var path: String
        var requiredFields: [String]
        var idField: String

        static let schema = Schema([
            .required("path", .string, "The folder replies are written to."),
            SchemaKey("required_fields", .list(.string), default: ["message_id", "text"], "String fields every reply file must have."),
            SchemaKey("id_field", .string, default: "message_id", "Field used as the event id."),
        ])
    }

    let configuration: Configuration
    let directory: String

    init(configuration: Configuration, context: StageBuildContext) throws {
        guard !configuration.path.isEmpty else {
            throw ConfigurationValueError(keyPath: "path", "the reply folder is not set", expected: "a folder path")
        }
        self.configuration = configuration
        directory = configuration.path
    }

    func run(into sink: any EventSink, context: StageContext) async throws {
        let fileManager = FileManager.default
        for folder in [directory, "\(directory)/sent", "\(directory)/rejected"] {
            try fileManager.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        // Watch first, then scan: a file landing in between is seen twice and sent once.
        let names = try FolderWatcher(directory: directory).names()
        let inFlight = InFlightNames()
        let existing = (try? fileManager.contentsOfDirectory(atPath: directory))?.sorted() ?? []
        context.logger.info("watching \(directory) for replies; \(existing.filter { !$0.hasPrefix(".") && $0 != "sent" && $0 != "rejected" }.count) waiting")
        for name in existing { try await handle(name, foundByScan: true, sink: sink, context: context, inFlight: inFlight) }
        for await name in names {
            try await handle(name, foundByScan: false, sink: sink, context: context, inFlight: inFlight)
        }
    }

    /// - Parameter foundByScan: the file was listed at startup rather than reported closed or
    ///   renamed, so it may still be open for writing.
    func handle(_ name: String, foundByScan: Bool, sink: any EventSink, context: StageContext, inFlight: InFlightNames) async throws {
        let path = "\(directory)/\(name)"
        var isDirectory: ObjCBool = false
        guard !name.hasPrefix("."), FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { return }
        // An empty file was closed before anything was written (touch, or a writer that
        // reopens it): its next close-after-write brings it back.
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        guard size > 0, inFlight.begin(name) else { return }
        let body: JSON
        do {
            body = try parse(path)
        } catch {
            let modified = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date) ?? .distantPast
            if foundByScan && Date().timeIntervalSince(modified) < 30 {
                // Probably still being written: its close-after-write event will bring it back.
                context.logger.debug("reply file \(name) is incomplete; waiting for its writer")
                inFlight.end(name)
                return
            }
            context.logger.error("rejected reply file \(name): \(error)")
            move(name, to: "rejected", context: context)
            inFlight.end(name)
            return
        }
        var event = Event(id: body[configuration.idField]?.textValue ?? Event.makeID(), pipeline: context.pipeline, user: nil, body: body)
        let mode = context.mode
        event.onComplete = { report in
            defer { inFlight.end(name) }
            guard mode == .live else { return }
            switch report.status {
            case .delivered, .partial, .noRecipients:
                move(name, to: "sent", context: context)
                context.logger.info("reply \(name) \(report.status.rawValue); moved to sent/")
            case .failed, .filtered:
                context.logger.warning("reply \(name) not delivered (\(report.reason ?? report.status.rawValue)); it stays and is sent at the next start")
            }
        }
        try await sink.submit(event)
    }

    /// The replies waiting in the folder now; nothing is moved.
    func eventsOnce(context: StageContext) async throws -> [Event] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted().filter { !$0.hasPrefix(".") }
        return names.compactMap { name in
            guard let body = try? parse("\(directory)/\(name)") else { return nil }
            return Event(id: body[configuration.idField]?.textValue ?? Event.makeID(), pipeline: context.pipeline, user: nil, body: body)
        }
    }

    func parse(_ path: String) throws -> JSON {
        guard let data = FileManager.default.contents(atPath: path) else { throw StageError(.invalidEvent, stage: "source", "unreadable") }
        let json = try JSON.parse(data)
        guard case .object = json else { throw StageError(.invalidEvent, stage: "source", "a reply must be a JSON object") }
        for field in configuration.requiredFields where json[field]?.stringValue == nil {
            throw StageError(.invalidEvent, stage: "source", "missing string field '\(field)'")
        }
        return json
    }

    func move(_ name: String, to folder: String, context: StageContext) {
        do {
            let target = "\(directory)/\(folder)/\(name)"
            if FileManager.default.fileExists(atPath: target) { try FileManager.default.removeItem(atPath: target) }
            try FileManager.default.moveItem(atPath: "\(directory)/\(name)", toPath: target)
        } catch {
            context.logger.error("could not move \(name) to \(folder)/: \(error)")
        }
    }
}

/// Files being processed, so a name reported twice (scan + inotify) is sent once.
final class InFlightNames: Sendable {
    private let names = Mutex(Set<String>())
    func begin(_ name: String) -> Bool { names.withLock { $0.insert(name).inserted } }
    func end(_ name: String) { names.withLock { _ = $0.remove(name) } }
}
