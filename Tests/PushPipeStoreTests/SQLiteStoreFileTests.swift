import Foundation
import GRDB
import PushPipeCore
import PushPipeSQLite
import PushPipeTesting
import Testing

/// The state file holds device tokens, Web Push keys and event bodies, and a database a newer
/// pushpipe migrated is refused, as the PostgreSQL store does too.
@Suite struct SQLiteStoreFileTests {
    static func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test func theStateIsReadableByItsOwnerOnly() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let previous = umask(0o022)
        defer { umask(previous) }
        let path = directory.file("var/state.sqlite")
        let store = try SQLiteStore(path: path)
        try await store.pipeline("p").register(DeviceToken(user: "alice", kind: "device", value: "aa11"), environment: nil, replace: false)
        #expect(try Self.mode(directory.file("var")) == 0o700)
        for file in [path, path + "-wal", path + "-shm"] {
            #expect(FileManager.default.fileExists(atPath: file), "\(file)")
            let mode = try Self.mode(file)
            #expect(mode == 0o600, "\(file): \(String(mode, radix: 8))")
        }
        try await store.close()
    }

    @Test func filesAnEarlierVersionLeftReadableAreTightened() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("state.sqlite")
        try await SQLiteStore(path: path).close()
        #expect(chmod(path, 0o644) == 0)
        let store = try SQLiteStore(path: path)
        #expect(try Self.mode(path) == 0o600)
        try await store.close()
    }

    @Test func aDatabaseMigratedByANewerVersionIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("state.sqlite")
        try await SQLiteStore(path: path).close()
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99-from-the-future')") }
        try queue.close()
        #expect(throws: NewerStoreError.self) { try SQLiteStore(path: path) }
        do {
            _ = try SQLiteStore(path: path)
        } catch let error as NewerStoreError {
            #expect(error.unknownMigrations == ["v99-from-the-future"])
            #expect(error.description.contains("newer pushpipe"))
        }
    }
}
