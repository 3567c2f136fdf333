import Foundation
import GRDB
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipeSQLite

/// What the SQLite store answers from memory instead of its file: watermarks (`StateMirror`)
/// and the tokens of users a poller claimed. Each answer must be the file's, and a change the
/// store did not make itself must not be served stale past its next commit.
@Suite struct SQLiteStoreMemoryTests {
    func mark(_ key: String, _ value: Int64, forward: Bool = true) -> StateWrite {
        StateWrite(stage: "dedupe", key: key, value: .int(value), onlyForward: forward)
    }

    /// Writes a watermark behind the store's back, through a connection of its own.
    func writeBehindTheStore(_ path: String, key: String, value: Int64) throws {
        let other = try DatabaseQueue(path: path)
        try other.write { db in
            try db.execute(
                sql: "UPDATE stage_state SET value = ? WHERE pipeline = 'p' AND stage = 'dedupe' AND key = ?",
                arguments: ["\(value)", key]
            )
        }
        try other.close()
    }

    @Test func watermarksFollowWhatTheFileCommitted() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("state.sqlite")
        let store = try SQLiteStore(path: path)
        try await store.pipeline("p").setState([mark("alice/1", 100)])
        #expect(try await store.pipeline("p").states(stage: "dedupe", keys: ["alice/1", "alice/2"]) == ["alice/1": 100])
        #expect(store.stateMirror.isLoaded(StateMirror.Stage(pipeline: "p", stage: "dedupe")))
        // SQLite decides whether a forward-only write moves the mark; memory follows it.
        try await store.pipeline("p").setState([mark("alice/1", 90), mark("alice/2", 5)])
        #expect(try await store.pipeline("p").states(stage: "dedupe", keys: ["alice/1", "alice/2"]) == ["alice/1": 100, "alice/2": 5])
        try await store.pipeline("p").setState([mark("alice/1", 90, forward: false)])
        #expect(try await store.pipeline("p").state(stage: "dedupe", key: "alice/1") == 90)

        // Served from memory: a change made behind the store's back is not seen...
        try writeBehindTheStore(path, key: "alice/1", value: 7)
        #expect(try await store.pipeline("p").state(stage: "dedupe", key: "alice/1") == 90)
        // ...until the store's next commit notices the file changed under it.
        try await store.pipeline("p").setState([mark("bob/1", 1)])
        #expect(try await store.pipeline("p").states(stage: "dedupe", keys: ["alice/1", "bob/1"]) == ["alice/1": 7, "bob/1": 1])
        try await store.close()

        // A new process reads what the file holds: memory never ran ahead of it.
        let reopened = try SQLiteStore(path: path)
        #expect(
            try await reopened.pipeline("p").states(stage: "dedupe", keys: ["alice/1", "alice/2", "bob/1"]) == [
                "alice/1": 7, "alice/2": 5, "bob/1": 1,
            ]
        )
        try await reopened.close()
    }

    @Test func aStageLargerThanTheCapacityIsReadFromTheFile() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("state.sqlite")
        let store = try SQLiteStore(path: path, stateMirrorCapacity: 2)
        try await store.pipeline("p").setState([mark("a", 1), mark("b", 2)])
        #expect(try await store.pipeline("p").states(stage: "dedupe", keys: ["a", "b"]) == ["a": 1, "b": 2])
        // A third row makes the copy too large: it is dropped, and reads go to the file.
        try await store.pipeline("p").setState([mark("c", 3)])
        try writeBehindTheStore(path, key: "a", value: 10)
        #expect(try await store.pipeline("p").states(stage: "dedupe", keys: ["a", "b", "c"]) == ["a": 10, "b": 2, "c": 3])
        try await store.close()
    }

    @Test func warmingTokensReadsTheClaimedUsersTokens() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        for (user, token) in [("1", "aa01"), ("1", "aa02"), ("2", "bb01")] {
            try await store.pipeline("p").register(DeviceToken(user: user, kind: "device", value: token), environment: nil, replace: false)
        }
        try await store.pipeline("p").register(
            DeviceToken(user: "2", kind: "activity", value: "cc01", scope: "game"),
            environment: nil,
            replace: false
        )
        // An interval of 0 makes every user due now.
        let work = store.pipeline("p").work
        try await work.schedule("poll:s", every: .seconds(0)) { ["1", "2"] }
        let claimed = try await work.claimRecurring("poll:s", every: .seconds(60), limit: 10)
        try await store.pipeline("p").warmTokens(users: claimed)
        #expect(claimed.sorted() == ["1", "2"])
        var prefetched: [TokenCache.Query: [DeviceToken]] = [:]
        struct NotCached: Error {}
        for user in claimed {
            for kind in ["device", "activity"] {
                let query = TokenCache.Query(pipeline: "p", user: user, kind: kind)
                // Only what the cache holds: a read here would fail.
                if let tokens = try? await store.tokenCache.tokens(for: query, read: { throw NotCached() }) { prefetched[query] = tokens }
            }
        }
        // Every kind of a claimed user: one it has no tokens of is cached as none.
        #expect(prefetched.count == 4)
        #expect(prefetched[TokenCache.Query(pipeline: "p", user: "1", kind: "activity")]?.isEmpty == true)
        // What the claim cached is what the file gives, in the same order.
        store.tokenCache.invalidate()
        for (query, tokens) in prefetched {
            #expect(try await store.pipeline("p").tokens(user: query.user, kind: query.kind) == tokens)
        }
        #expect(prefetched[TokenCache.Query(pipeline: "p", user: "1", kind: "device")]?.count == 2)
        try await store.close()
    }
}
