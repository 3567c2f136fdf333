import Foundation
import PushPipeCore
import PushPipeStages
import Synchronization

/// One event per reply file written into a folder (Sven's `reply-sven` step).
///
/// Files present at startup are sent then; new ones as soon as they are complete. After
/// delivery a file moves to `sent/`, so a restart never sends it again; a malformed file
/// moves to `rejected/` with the reason logged. Names starting with `.` are ignored, so a
/// writer can create `.reply.tmp` and rename it into place; empty files wait for their writer.
///
/// inotify can lose events (its queue overflows under a burst while the pipeline is busy) and
/// does not report every way a file can appear (a hard link). So the folder is scanned again
/// after an overflow and every `rescan_interval`: a file with no delivery pending or finished
/// is picked up then. A file whose delivery failed goes back into the folder after a wait
/// (`FailedReplies`), to be claimed and sent again.
///
/// Several daemons may watch one folder (a shared volume): each file is claimed by renaming
/// it into `.claimed/<process>/` first. rename(2) is atomic, so exactly one daemon gets it.
/// The owner touches its claimed files every third of `claim_lease`; files in a claim folder
/// nobody touched for a whole lease (their daemon died or restarted) go back into the folder,
/// where one daemon claims them again.
struct ReplyFolderSource: Source, OneShotSource, LongRunningStage {
    static let summary = "Sends one event per JSON file written into a folder (inotify), then moves it to sent/."

    struct Configuration: StageConfiguration {
        var path: String
        var requiredFields: [String]
        var idField: String
        @Seconds var rescanInterval: Duration
        @Seconds var claimLease: Duration

        static let schema = Schema([
            .required("path", .string, "The folder replies are written to; created when missing; relative paths start at the working directory."),
            SchemaKey("required_fields", .list(.string), default: ["message_id", "text"], "String fields every reply file must have."),
            SchemaKey("id_field", .string, default: "message_id", "Field used as the event id."),
            SchemaKey(
                "rescan_interval",
                .duration,
                default: 60,
                in: 0.1...Double.infinity,
                "How often the folder is scanned besides inotify (a safety net for lost events; more often would be a polling loop)."
            ),
            SchemaKey(
                "claim_lease",
                .duration,
                default: 30,
                in: 1...Double.infinity,
                "How long a file claimed by a daemon that stopped renewing its claims (died, restarted) waits before another takes it."
            ),
        ])
    }

    let configuration: Configuration
    let directory: String
    let failedReplies = FailedReplies()

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
        // A dry run claims nothing (it moves no file), so it leaves no claim folder behind.
        if context.mode == .live { try fileManager.createDirectory(atPath: claimDirectory, withIntermediateDirectories: true) }
        try await watch(into: sink, context: context)
    }

    /// Keeps this process's claims alive until the pipeline drained, and returns abandoned ones.
    func run(context: StageContext) async throws {
        guard context.mode == .live else { return await untilCancelled() }
        await keepClaims(context: context)
    }

    /// The scan at start, then inotify and the periodic scans.
    private func watch(into sink: any EventSink, context: StageContext) async throws {
        // Watch first, then scan: a file landing in between is seen twice and sent once.
        let watcher = try FolderWatcher(directory: directory)
        let inFlight = InFlightNames()
        let waiting = waitingNames()
        context.logger.info("watching \(directory) for replies; \(waiting.count) waiting")
        for name in waiting { try await handle(name, foundByScan: true, sink: sink, context: context, inFlight: inFlight) }
        let interval = configuration.rescanInterval
        var nextScan = ContinuousClock.now + interval
        while let change = await watcher.next(until: nextScan) {
            switch change {
            case .files(let names):
                for name in names { try await handle(name, foundByScan: false, sink: sink, context: context, inFlight: inFlight) }
                guard ContinuousClock.now >= nextScan else { continue }
            case .overflow:
                context.logger.warning("inotify dropped events in \(directory) (queue overflow); scanning the folder")
            case .idle:
                break
            }
            let found = try await rescan(sink: sink, context: context, inFlight: inFlight)
            if found > 0 && change == .idle { context.logger.warning("the folder scan found \(found) replies inotify did not report") }
            nextScan = ContinuousClock.now + interval
        }
    }

    /// Reply files in the folder now, oldest name first (not `sent/`, `rejected/` or dot files).
    func waitingNames() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
            .filter { !$0.hasPrefix(".") && $0 != "sent" && $0 != "rejected" }
    }

    /// Submits what waits in the folder and has no delivery pending (a file whose delivery
    /// ended is in `sent/`, `rejected/` or this process's claim folder). Returns how many.
    func rescan(sink: any EventSink, context: StageContext, inFlight: InFlightNames) async throws -> Int {
        var found = 0
        let waiting = waitingNames()
        inFlight.forgetShown(except: Set(waiting))
        for name in waiting where !inFlight.isSettled(name) {
            if try await handle(name, foundByScan: true, sink: sink, context: context, inFlight: inFlight) { found += 1 }
        }
        return found
    }

    /// - Parameter foundByScan: the file was listed at startup rather than reported closed or
    ///   renamed, so it may still be open for writing.
    /// Returns whether the file was submitted.
    @discardableResult
    func handle(_ name: String, foundByScan: Bool, sink: any EventSink, context: StageContext, inFlight: InFlightNames) async throws -> Bool {
        let path = "\(directory)/\(name)"
        var isDirectory: ObjCBool = false
        guard !name.hasPrefix("."), FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            return false
        }
        // An empty file was closed before anything was written (touch, or a writer that
        // reopens it): its next close-after-write brings it back.
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        guard size > 0, inFlight.begin(name) else { return false }
        let body: JSON
        do {
            body = try parse(path)
        } catch {
            let modified = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date) ?? .distantPast
            if foundByScan && Date().timeIntervalSince(modified) < 30 {
                // Probably still being written: its close-after-write event will bring it back.
                context.logger.debug("reply file \(name) is incomplete; waiting for its writer")
                inFlight.end(name)
                return false
            }
            defer { inFlight.end(name) }
            // Claimed first: of several daemons, one rejects it.
            guard context.mode != .live || claim(name) else { return false }
            context.logger.error("rejected reply file \(name): \(error)")
            move(name, from: context.mode == .live ? claimDirectory : directory, to: "rejected", context: context)
            return false
        }
        // Of several daemons watching the folder, the one whose rename succeeds sends it.
        guard context.mode != .live || claim(name) else {
            inFlight.end(name)
            return false
        }
        let claimDirectory = self.claimDirectory
        let failedReplies = self.failedReplies
        let firstWait = configuration.claimLease
        var event = Event(id: body[configuration.idField]?.textValue ?? Event.makeID(), pipeline: context.pipeline, user: nil, body: body)
        let mode = context.mode
        event.onComplete = { report in
            // A dry run moves nothing: the file is settled for this process, not sent again by a scan.
            guard mode == .live else { return inFlight.end(name, shown: true) }
            switch report.status {
            // Held by a timing filter: the store keeps it now, and sends it when it falls due.
            case .delivered, .partial, .noRecipients, .scheduled, .deferred, .batched:
                move(name, from: claimDirectory, to: "sent", context: context)
                failedReplies.delivered(name)
                inFlight.end(name)
                context.logger.info("reply \(name) \(report.status.rawValue); moved to sent/")
            case .failed, .filtered, .throttled, .capped:
                // Claimed by this process until its wait is over (`keepClaims` puts it back).
                let wait = failedReplies.failed(name, firstWait: firstWait)
                inFlight.end(name)
                context.logger.warning(
                    "reply \(name) not delivered (\(report.reason ?? report.status.rawValue)); sent again in \(wait.components.seconds) s"
                )
            }
        }
        do {
            try await sink.submit(event)
        } catch {
            inFlight.end(name)
            throw error
        }
        return true
    }

    /// The replies waiting in the folder now; nothing is moved.
    func eventsOnce(context: StageContext) async throws -> [Event] {
        waitingNames().compactMap { name in
            guard let body = try? parse("\(directory)/\(name)") else { return nil }
            return Event(id: body[configuration.idField]?.textValue ?? Event.makeID(), pipeline: context.pipeline, user: nil, body: body)
        }
    }

    func parse(_ path: String) throws -> JSON {
        guard let data = FileManager.default.contents(atPath: path) else { throw StageError(.invalidEvent, stage: "source", "unreadable") }
        let json = try JSON.parse(data, maximumDepth: JSON.acceptedDepth)
        guard case .object = json else { throw StageError(.invalidEvent, stage: "source", "a reply must be a JSON object") }
        for field in configuration.requiredFields where json[field]?.stringValue == nil {
            throw StageError(.invalidEvent, stage: "source", "missing string field '\(field)'")
        }
        return json
    }

    func move(_ name: String, from source: String, to folder: String, context: StageContext) {
        do {
            let target = "\(directory)/\(folder)/\(name)"
            if FileManager.default.fileExists(atPath: target) { try FileManager.default.removeItem(atPath: target) }
            try FileManager.default.moveItem(atPath: "\(source)/\(name)", toPath: target)
        } catch {
            context.logger.error("could not move \(name) to \(folder)/: \(error)")
        }
    }
}

/// Files being processed, so a name reported twice (scan + inotify) is sent once; and, in a
/// dry run (which moves nothing), files already shown, which a scan leaves alone (a file
/// written again under that name is new, and inotify brings it back). A live daemon needs no
/// such memory: a file it processed is in `sent/` or in its claim folder.
final class InFlightNames: Sendable {
    private struct Names {
        var processing = Set<String>()
        var shown = Set<String>()
    }

    private let names = Mutex(Names())

    func begin(_ name: String) -> Bool {
        names.withLock { names in
            names.shown.remove(name)
            return names.processing.insert(name).inserted
        }
    }

    func end(_ name: String, shown: Bool = false) {
        names.withLock { names in
            names.processing.remove(name)
            if shown { names.shown.insert(name) }
        }
    }

    /// Shown files that left the folder need no memory.
    func forgetShown(except present: Set<String>) {
        names.withLock { $0.shown.formIntersection(present) }
    }

    /// Pending, or shown by a dry run: not for a scan to send.
    func isSettled(_ name: String) -> Bool {
        names.withLock { $0.processing.contains(name) || $0.shown.contains(name) }
    }
}
