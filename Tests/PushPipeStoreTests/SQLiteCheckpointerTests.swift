import Dispatch
import Foundation
import GRDB
import PushPipeTesting
import Synchronization
import Testing

@testable import PushPipeCore
@testable import PushPipeSQLite

/// Checkpoints run on a connection of their own, beside the writer: no commit may wait for
/// one, every frame must reach the database file, and the WAL must stay bounded.
@Suite(.timeLimit(.minutes(1))) struct SQLiteCheckpointerTests {
    /// 16 pages (64 KB) instead of 8,000: a few writes cross it.
    static let threshold: Int32 = 16

    static func entry(_ number: Int) -> HistoryEntry {
        HistoryEntry(
            pipeline: "p",
            user: "u",
            eventID: "e\(number)",
            createdAt: Double(number),
            record: .string(String(repeating: "x", count: 2_000) + "\(number)")
        )
    }

    @Test func everyFrameReachesTheDatabaseFileOffTheWriter() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"), checkpointThreshold: Self.threshold)
        let (checkpoints, checkpointed) = AsyncStream.makeStream(of: StoreCheckpoint.self)
        store.observeCheckpoints { checkpointed.yield($0) }
        // Each entry is half a page of record: 40 of them cross the threshold.
        for number in 0..<40 { try await store.appendHistory(Self.entry(number)) }
        var results = checkpoints.makeAsyncIterator()
        let result = try #require(await results.next())
        // Nothing was written while it ran: it copied the whole WAL.
        #expect(result.walFrames >= Int(Self.threshold))
        #expect(result.checkpointedFrames == result.walFrames)
        try await store.close()
    }

    @Test func commitsGoOnWhileACheckpointIsHeldUp() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("state.sqlite")
        let store = try SQLiteStore(path: path, checkpointThreshold: Self.threshold)
        let entered = Flag()
        let release = DispatchSemaphore(value: 0)
        // The first checkpoint holds the checkpointer's connection until the test lets it go.
        store.observeCheckpoints { _ in
            if !entered.raise() { release.wait() }
        }
        var written = 0
        while !entered.isRaised, written < 10_000 {
            try await store.appendHistory(Self.entry(written))
            written += 1
        }
        #expect(entered.isRaised)
        // Inline checkpoints would have the writer wait here for ever; these commit.
        for _ in 0..<30 {
            try await store.appendHistory(Self.entry(written))
            written += 1
        }
        release.signal()
        try await store.close()
        let reopened = try SQLiteStore(path: path)
        let history = try await reopened.pipeline("p").history(user: "u", limit: 100_000, before: nil)
        #expect(history.count == written)
        #expect(Set(history.map(\.eventID)).count == written)
        try await reopened.close()
    }

    /// A background pass never copies the frames appended while it ran, and the WAL only
    /// restarts once all are copied: the writer catches up on the few left behind, so the WAL
    /// never holds more than what a checkpoint found in it and a commit or two.
    ///
    /// How much that is depends on how long a pass takes, which a loaded machine stretches: the
    /// bound is the passes' own, not a fixed size.
    @Test func theWALRestartsUnderSustainedWrites() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("state.sqlite")
        let threshold: Int32 = 256
        let store = try SQLiteStore(path: path, checkpointThreshold: threshold)
        let checkpoints = Mutex<[StoreCheckpoint]>([])
        store.observeCheckpoints { result in checkpoints.withLock { $0.append(result) } }
        // 2,000 commits of a 2 KB entry: at least 8 MB of frames through the WAL, which
        // without checkpoints or the writer's catch-up would hold all of them.
        var largestWAL = 0
        var written = 0
        func write() async throws {
            try await store.appendHistory(Self.entry(written))
            written += 1
            let size = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
            largestWAL = max(largestWAL, size)
        }
        for _ in 0..<2_000 { try await write() }
        // The frames appended while a background pass runs are found by the catch-up after it:
        // the run ends at one, or a pass still running at the end would leave them unseen.
        let before = checkpoints.withLock { $0.count }
        while written < 10_000, !checkpoints.withLock({ $0.dropFirst(before).contains { $0.kind == .catchUp } }) { try await write() }
        try await store.close()
        let seen = checkpoints.withLock { $0 }
        #expect(seen.contains { $0.kind == .background })
        #expect(seen.contains { $0.kind == .catchUp })
        // A frame is a page and its 24-byte header; the file has a 32-byte header.
        let mostFound = max(Int(threshold), seen.map(\.walFrames).max() ?? 0)
        let frameBytes = 4096 + 24
        #expect(
            largestWAL <= 32 + (mostFound + 16) * frameBytes,
            "WAL reached \(largestWAL) bytes; checkpoints found at most \(mostFound) frames"
        )
        // A catch-up copies every frame (nothing appends meanwhile, nobody reads): the next
        // commit starts the WAL over.
        #expect(seen.filter { $0.kind == .catchUp }.allSatisfy { $0.checkpointedFrames == $0.walFrames })
        let reopened = try SQLiteStore(path: path)
        #expect(try await reopened.pipeline("p").history(user: "u", limit: 100_000, before: nil).count == written)
        try await reopened.close()
    }
}

/// A flag the checkpointer's thread raises and the test reads.
private final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    var isRaised: Bool { value.load(ordering: .acquiring) }
    /// Whether it was raised already.
    func raise() -> Bool { value.exchange(true, ordering: .acquiringAndReleasing) }
}
