import Foundation
import Logging
import PushPipeApps
import PushPipeCore
import PushPipeSQLite
import PushPipeStages
import PushPipeTesting
import Testing

/// The reply folder with real inotify: what is emitted, when, and where files end up.
@Suite struct ReplyFolderSourceTests {
    /// Records events and completes them with a chosen status, as a pipeline would.
    final class RecordingSink: EventSink {
        let events = ObservedState([Event]())
        let status: EventReport.Status
        /// The first this many events fail (a store away, a provider refusing for a while).
        let failing: Int
        /// While closed, `submit` waits (a busy pipeline): the source reads no more inotify events.
        private let gate = ObservedState(true)
        init(status: EventReport.Status, failing: Int = 0) {
            self.status = status
            self.failing = failing
        }

        func close() { gate.update { $0 = false } }
        func open() { gate.update { $0 = true } }

        /// Records after the completion callback, so a test that saw the event also sees its file moved.
        func submit(_ event: Event) async throws {
            _ = try await gate.wait(timeout: 60, { $0 ? true : nil }, failure: { _ in WaitTimedOut("the gate stayed closed") })
            let status = events.value.count < failing ? .failed : status
            await event.onComplete?(EventReport(eventID: event.id, pipeline: event.pipeline, user: nil, status: status))
            events.update { $0.append(event) }
        }

        func submitAndWait(_ event: Event) async throws -> EventReport {
            try await submit(event)
            return EventReport(eventID: event.id, pipeline: event.pipeline, user: nil, status: status)
        }

        func waitFor(_ count: Int, timeout: Double = 20) async throws -> [Event] {
            try await events.wait(
                timeout: timeout,
                { $0.count >= count ? $0 : nil },
                failure: { WaitTimedOut("expected \(count) events, got \($0.count)") }
            )
        }
    }

    func withSource(
        status: EventReport.Status = .delivered,
        failing: Int = 0,
        options: String = "",
        _ prepare: (TemporaryDirectory) throws -> Void = { _ in },
        _ body: @Sendable (TemporaryDirectory, RecordingSink) async throws -> Void
    ) async throws {
        let directory = try TemporaryDirectory("replies")
        defer { directory.remove() }
        try prepare(directory)
        let file = try directory.write(
            "pipeline.yaml",
            """
            pipeline: replies
            sources: [{type: reply.folder, path: \(directory.path)\(options)}]
            renderer: {type: json.template, payload: {}}
            transport: {type: stdout}
            """
        )
        let result = await ConfigLoader(builtins: BuiltinStages.all + AppStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
            .load(pipelineFiles: [file], pluginsDirectory: nil)
        let source = try #require(result.pipelines.first?.sources.first?.stage)
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let sink = RecordingSink(status: status, failing: failing)
        // Warnings only: the overflow test's sixteen thousand "delivered" lines buried CI's failures.
        var logger = Logger(label: "replies")
        logger.logLevel = .warning
        let context = StageContext(pipeline: "replies", stage: "sources[0]", store: store, logger: logger, mode: .live)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await source.run(into: sink, context: context) }
            // As the runtime does: the claims are kept (and abandoned ones returned) beside the source.
            if let claims = source as? any LongRunningStage { group.addTask { try await claims.run(context: context) } }
            defer { group.cancelAll() }
            try await body(directory, sink)
        }
        try await store.close()
    }

    @Test func filesPresentAtStartupAreSentOnceAndMalformedOnesRejected() async throws {
        try await withSource({ directory in
            // Scanned in name order: the valid file last, so its event means the others were handled.
            try directory.write("z.json", #"{"message_id": "m1", "text": "one"}"#)
            try directory.write("broken.json", #"{"message_id": "m2""#)
            try directory.write("no-text.json", #"{"message_id": "m3"}"#)
            try directory.write(".partial.tmp", #"{"message_id": "m4", "text": "hidden"}"#)
            // They arrived while the daemon was down, not a moment ago.
            for name in ["z.json", "broken.json", "no-text.json"] {
                try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: directory.file(name))
            }
        }) { directory, sink in
            let events = try await sink.waitFor(1)
            #expect(events.map(\.id) == ["m1"])
            #expect(events.first?.body["text"] == "one")
            #expect(events.first?.user == nil, "a reply goes to every registered install")
            #expect(FileManager.default.fileExists(atPath: directory.file("sent/z.json")))
            #expect(!FileManager.default.fileExists(atPath: directory.file("z.json")))
            #expect(FileManager.default.fileExists(atPath: directory.file("rejected/broken.json")))
            #expect(FileManager.default.fileExists(atPath: directory.file("rejected/no-text.json")))
            #expect(FileManager.default.fileExists(atPath: directory.file(".partial.tmp")))
        }
    }

    @Test func halfWrittenFilesAreNotReadUntilClosed() async throws {
        try await withSource { directory, sink in
            // One open(2) for the whole write, as a writer process would do it.
            let descriptor = open(directory.file("slow.json"), O_CREAT | O_WRONLY, 0o644)
            #expect(descriptor >= 0)
            let slow = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            try slow.write(contentsOf: Data(#"{"message_id": "slow", "te"#.utf8))
            try directory.write("later.json", #"{"message_id": "later", "text": "complete"}"#)
            // inotify reports in order: had the open file been taken, it would come first.
            #expect(try await sink.waitFor(1).map(\.id) == ["later"])
            #expect(!FileManager.default.fileExists(atPath: directory.file("rejected/slow.json")))
            try slow.write(contentsOf: Data(#"xt": "finally done"}"#.utf8))
            try slow.close()
            let events = try await sink.waitFor(2)
            #expect(events.map(\.id) == ["later", "slow"])
            #expect(events.last?.body["text"] == "finally done")
        }
    }

    @Test func aFileStillBeingWrittenAtStartupIsLeftForItsWriter() async throws {
        try await withSource({ directory in
            try directory.write("fresh.json", #"{"message_id": "fresh", "te"#)
        }) { directory, sink in
            try directory.write("other.json", #"{"message_id": "other", "text": "x"}"#)
            #expect(try await sink.waitFor(1).map(\.id) == ["other"])
            #expect(FileManager.default.fileExists(atPath: directory.file("fresh.json")))
            try directory.write("fresh.json", #"{"message_id": "fresh", "text": "now complete"}"#)
            #expect(try await sink.waitFor(2).map(\.id) == ["other", "fresh"])
        }
    }

    @Test func emptyFilesAreLeftForTheirWriter() async throws {
        try await withSource { directory, sink in
            // Created and closed empty (touch, or a writer that reopens to write): not complete yet.
            _ = FileManager.default.createFile(atPath: directory.file("empty.json"), contents: nil)
            try directory.write("full.json", #"{"message_id": "full", "text": "x"}"#)
            #expect(try await sink.waitFor(1).map(\.id) == ["full"])
            #expect(FileManager.default.fileExists(atPath: directory.file("empty.json")))
            #expect(!FileManager.default.fileExists(atPath: directory.file("rejected/empty.json")))
        }
    }

    @Test func filesRenamedIntoTheFolderAreSent() async throws {
        try await withSource { directory, sink in
            let outside = try TemporaryDirectory("outside")
            defer { outside.remove() }
            let staged = try outside.write("reply.json", #"{"message_id": "moved", "text": "hello"}"#)
            try FileManager.default.moveItem(atPath: staged, toPath: directory.file("reply.json"))
            #expect(try await sink.waitFor(1).map(\.id) == ["moved"])
            #expect(FileManager.default.fileExists(atPath: directory.file("sent/reply.json")))
        }
    }

    @Test func undeliveredRepliesStayClaimedUntilTheirRetry() async throws {
        try await withSource(status: .failed) { directory, sink in
            try directory.write("a.json", #"{"message_id": "m1", "text": "one"}"#)
            _ = try await sink.waitFor(1)
            // Kept claimed by this process for a claim lease (30 s) before it is tried again.
            #expect(FileManager.default.fileExists(atPath: directory.file(".claimed/\(QueuedEvent.thisProcess)/a.json")))
            #expect(!FileManager.default.fileExists(atPath: directory.file("sent/a.json")))
        }
    }

    /// A reply whose delivery failed does not stay in its daemon's claim folder until the
    /// daemon's next start: it goes back into the folder after a wait, is claimed again and sent.
    @Test func aFailedReplyIsSentAgainAfterAWait() async throws {
        try await withSource(failing: 1, options: ", claim_lease: 1s") { directory, sink in
            try directory.write("a.json", #"{"message_id": "m1", "text": "one"}"#)
            #expect(try await sink.waitFor(2).map(\.id) == ["m1", "m1"])
            #expect(FileManager.default.fileExists(atPath: directory.file("sent/a.json")))
        }
    }

    /// A file claimed by a daemon that stopped touching its claims (it died) goes
    /// back into the folder after `claim_lease`, and is sent.
    @Test func claimsOfAStoppedDaemonComeBack() async throws {
        let prepare: (TemporaryDirectory) throws -> Void = { directory in
            try FileManager.default.createDirectory(atPath: directory.file(".claimed/a-dead-daemon"), withIntermediateDirectories: true)
            let path = try directory.write(".claimed/a-dead-daemon/r.json", #"{"message_id": "orphan", "text": "x"}"#)
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-60)], ofItemAtPath: path)
        }
        try await withSource(options: ", claim_lease: 1s", prepare) { directory, sink in
            let ids = try await sink.waitFor(1).map(\.id)
            #expect(ids == ["orphan"])
            #expect(FileManager.default.fileExists(atPath: directory.file("sent/r.json")))
        }
    }

    /// A file can appear without an event inotify reports (a hard link makes only
    /// IN_CREATE); the periodic scan picks it up.
    @Test func aFileInotifyDoesNotReportIsFoundByTheRescan() async throws {
        try await withSource(options: ", rescan_interval: 200ms") { directory, sink in
            let outside = try TemporaryDirectory("outside")
            defer { outside.remove() }
            let original = try outside.write("reply.json", #"{"message_id": "linked", "text": "hello"}"#)
            #expect(link(original, directory.file("reply.json")) == 0)
            #expect(try await sink.waitFor(1).map(\.id) == ["linked"])
            #expect(FileManager.default.fileExists(atPath: directory.file("sent/reply.json")))
        }
    }

    /// Replies written while inotify's queue overflows are sent without waiting for a restart.
    /// The pipeline is held busy (the source reads no events) while more files than the kernel
    /// queues are written; every one is then sent exactly once, long before the periodic scan
    /// (60 s) would run.
    @Test func anInotifyQueueOverflowIsFollowedByAScan() async throws {
        let limit =
            (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 16384
        try #require(limit <= 65536, "max_queued_events is \(limit): too many files to write for an overflow")
        try await withSource { directory, sink in
            sink.close()
            try directory.write("first.json", #"{"message_id": "first", "text": "x"}"#)
            let files = limit + 100
            for index in 0..<files {
                try directory.write(String(format: "r%06d.json", index), #"{"message_id": "m\#(index)", "text": "x"}"#)
            }
            sink.open()
            // Sixteen thousand files take a while on a loaded machine; the scan that is tested
            // comes at once, the periodic one after 60 s, and neither misses or repeats one.
            let events = try await sink.waitFor(files + 1, timeout: 120)
            #expect(events.count == files + 1)
            #expect(Set(events.map(\.id)).count == files + 1, "each reply once")
        }
    }
}
