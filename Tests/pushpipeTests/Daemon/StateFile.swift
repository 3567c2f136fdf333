import GRDB

/// A daemon's SQLite state, read as the test's `eventually` looks at it: each look opens the
/// file afresh and reads committed rows only, so it sees what the daemon wrote, never a cache.
struct StateFile {
    let path: String

    /// The single value `sql` selects (a count, a state), nil when no row matches.
    func value<Value: DatabaseValueConvertible>(_ sql: String, _ arguments: StatementArguments = []) throws -> Value? {
        try read { db in try Value.fetchOne(db, sql: sql, arguments: arguments) }
    }

    /// Every value `sql` selects, in its order.
    func values<Value: DatabaseValueConvertible>(_ sql: String, _ arguments: StatementArguments = []) throws -> [Value] {
        try read { db in try Value.fetchAll(db, sql: sql, arguments: arguments) }
    }

    private func read<T>(_ body: (Database) throws -> T) throws -> T {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read(body)
    }

    func count(_ table: String, where condition: String = "1", _ arguments: StatementArguments = []) throws -> Int {
        try value("SELECT count(*) FROM \(table) WHERE \(condition)", arguments) ?? 0
    }

    /// Events accepted and not yet processed.
    var queuedEvents: Int { get throws { try count("work", where: "kind LIKE 'event:%'") } }

    /// An event's state in its record (`delivered`, `dead_letter`…), nil before it is written.
    func eventState(_ eventID: String) throws -> String? {
        try value("SELECT state FROM event_records WHERE event_id = ?", [eventID])
    }

    func tokens(of user: String) throws -> Int {
        try count("registrations", where: "user_id = ?", [user])
    }
}
