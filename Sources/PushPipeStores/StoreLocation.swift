import Foundation
import Logging
import PushPipeCore
import PushPipePostgres
import PushPipeSQLite

/// Where the daemon keeps its state: `sqlite:PATH` (the default, one machine) or
/// `postgres://user:password@host:port/database?sslmode=...` (several daemons on one database).
/// `description` never shows the password: the location ends up in logs.
public enum StoreLocation: Sendable, Equatable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(PostgresLocation)

    public init(parsing text: String) throws {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else { throw InvalidLocation(description: "sqlite: needs a file path, e.g. sqlite:var/pushpipe.sqlite") }
            self = .sqlite(path: path)
            return
        }
        self = .postgres(try PostgresLocation(parsing: text))
    }

    public var description: String {
        switch self {
        case .sqlite(let path): "sqlite:\(path)"
        case .postgres(let location): location.description
        }
    }

    public var isPostgres: Bool {
        if case .postgres = self { return true }
        return false
    }

    /// The daemon's lock on a SQLite state (`SQLiteStateLock`), held until it closed the store;
    /// nil for PostgreSQL, which daemons share by design.
    public func lockForDaemon() throws -> SQLiteStateLock? {
        guard case .sqlite(let path) = self else { return nil }
        return try SQLiteStateLock.acquire(forDatabaseAt: path)
    }

    /// Opens (and migrates) the store. The PostgreSQL store runs its pool itself until it is
    /// closed: a daemon closes it last, once the pipelines drained (`StoreService`).
    /// With the daemon's `lock`, a SQLite store takes over what an earlier process left queued.
    public func open(logger: Logger, observers: StoreObservers = StoreObservers(), lock: SQLiteStateLock? = nil) async throws -> any Store {
        switch self {
        case .sqlite(let path):
            return try SQLiteStore(path: path, observers: observers, takingOverQueuedEvents: lock != nil)
        case .postgres(let location):
            return try await PostgresStore(location: location, logger: logger, observers: observers)
        }
    }
}
