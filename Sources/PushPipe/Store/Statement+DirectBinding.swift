import Foundation
import GRDB
import GRDBSQLite

/// SQLite copies a value bound with this destructor, so the Swift storage may go away at once.
private let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

extension Statement {
    /// Runs a statement that returns no rows, its values bound straight through SQLite's C API.
    ///
    /// Why not `execute(arguments:)`: GRDB boxes each value as `any DatabaseValueConvertible`,
    /// converts it to a `DatabaseValue`, checks the count against the statement and nests a
    /// closure per value; for the deliveries insert, one row per notification, that was 4.9% of
    /// the APNs path's CPU, more than SQLite's own insert. Only for statements run on the
    /// writer inside a GRDB transaction, with no transaction observer to tell (the store has
    /// none): GRDB's per-statement bookkeeping is for those.
    func executeBinding(_ bind: (DirectBindings) -> Void) throws {
        let handle = sqliteStatement
        sqlite3_reset(handle)
        bind(DirectBindings(handle: handle))
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE else {
            let message = String(cString: sqlite3_errmsg(sqlite3_db_handle(handle)))
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: String(cString: sqlite3_sql(handle)))
        }
        sqlite3_reset(handle)
    }
}

/// Binds one statement's values by position (1-based, as in SQLite). Every value is bound each
/// time: a value left out keeps the previous run's.
struct DirectBindings {
    let handle: SQLiteStatement

    func bind(_ value: String, at index: Int32) {
        let length = Int32(value.utf8.count)
        _ = value.withCString { sqlite3_bind_text(handle, index, $0, length, transient) }
    }

    func bind(_ value: String?, at index: Int32) {
        guard let value else { sqlite3_bind_null(handle, index); return }
        bind(value, at: index)
    }

    /// UTF-8 bytes bound as text: a serialized payload goes in without becoming a `String`.
    func bindText(_ bytes: Data, at index: Int32) {
        guard !bytes.isEmpty else { bind("", at: index); return }
        _ = bytes.withUnsafeBytes { sqlite3_bind_text(handle, index, $0.baseAddress, Int32($0.count), transient) }
    }

    func bind(_ value: Int, at index: Int32) {
        sqlite3_bind_int64(handle, index, Int64(value))
    }

    func bind(_ value: Double, at index: Int32) {
        sqlite3_bind_double(handle, index, value)
    }
}
