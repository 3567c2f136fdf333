import Foundation
import GRDB
import GRDBSQLite
import PushPipeCore

/// SQLite copies a value bound with this destructor, so the Swift storage may go away at once.
private let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
/// SQLite uses a value bound with this destructor where it is, until the statement is reset.
private let stable = unsafeBitCast(OpaquePointer(bitPattern: 0), to: sqlite3_destructor_type.self)

extension Statement {
    /// Runs a statement that returns no rows, its values bound straight through SQLite's C API.
    ///
    /// Why not `execute(arguments:)`: GRDB boxes each value as `any DatabaseValueConvertible`,
    /// converts it to a `DatabaseValue`, checks the count against the statement and nests a
    /// closure per value; for the deliveries insert, one row per notification, that costs more
    /// than SQLite's own insert. Only for statements run on the writer inside a GRDB
    /// transaction, with no transaction observer to tell (the store has none): GRDB's
    /// per-statement bookkeeping is for those.
    ///
    /// Texts are copied into one buffer and bound where they are: bound as transient, SQLite
    /// would make a heap copy of each, several `malloc`s per notification.
    ///
    /// - Parameter scratchBytes: room for the statement's texts; longer ones are bound as copies.
    func executeBinding(scratchBytes: Int = DirectBindings.scratchBytes, _ bind: (inout DirectBindings) -> Void) throws {
        let handle = sqliteStatement
        sqlite3_reset(handle)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: scratchBytes, alignment: 1)
        // Nothing may keep pointing into the buffer once it is gone.
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
            scratch.deallocate()
        }
        var bindings = DirectBindings(handle: handle, scratch: scratch)
        bind(&bindings)
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE else {
            let message = String(cString: sqlite3_errmsg(sqlite3_db_handle(handle)))
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: String(cString: sqlite3_sql(handle)))
        }
    }
}

/// Binds one statement's values by position (1-based, as in SQLite). Every value is bound each
/// time: a value left out keeps the previous run's.
struct DirectBindings {
    /// Enough for a deliveries row with a typical payload.
    static let scratchBytes = 2048

    let handle: SQLiteStatement
    private let scratch: UnsafeMutableRawBufferPointer
    private var used = 0

    init(handle: SQLiteStatement, scratch: UnsafeMutableRawBufferPointer) {
        self.handle = handle
        self.scratch = scratch
    }

    /// Text goes in as `StoredText` makes it: every string this store's direct bindings take.
    mutating func bind(_ value: String, at index: Int32) {
        var value = StoredText.storable(value)
        // A String is valid UTF-8 and `storable` replaced its NULs: nothing left to repair.
        value.withUTF8 { bytes in bindCheckedText(UnsafeRawBufferPointer(bytes), at: index) }
    }

    mutating func bind(_ value: String?, at index: Int32) {
        guard let value else {
            sqlite3_bind_null(handle, index)
            return
        }
        bind(value, at: index)
    }

    /// UTF-8 bytes bound as text: a serialized payload goes in without becoming a `String`.
    mutating func bindText(_ bytes: Data, at index: Int32) {
        bytes.withUnsafeBytes { bindText($0, at: index) }
    }

    mutating func bindText(_ bytes: [UInt8], at index: Int32) {
        bytes.withUnsafeBytes { bindText($0, at: index) }
    }

    private mutating func bindText(_ bytes: UnsafeRawBufferPointer, at index: Int32) {
        // Invalid UTF-8 or a NUL: the repaired copy instead (`StoredText`).
        if let repaired = StoredText.repaired(bytes) {
            repaired.withUnsafeBytes { bindCheckedText($0, at: index) }
            return
        }
        bindCheckedText(bytes, at: index)
    }

    private mutating func bindCheckedText(_ bytes: UnsafeRawBufferPointer, at index: Int32) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else {
            // An empty text, not NULL (SQLite makes it from a copy of nothing).
            sqlite3_bind_text(handle, index, "", 0, transient)
            return
        }
        guard bytes.count <= scratch.count - used else {
            sqlite3_bind_text(handle, index, base, Int32(bytes.count), transient)
            return
        }
        let place = scratch.baseAddress! + used
        place.copyMemory(from: base, byteCount: bytes.count)
        used += bytes.count
        sqlite3_bind_text(handle, index, place, Int32(bytes.count), stable)
    }

    func bind(_ value: Int, at index: Int32) {
        sqlite3_bind_int64(handle, index, Int64(value))
    }

    func bind(_ value: Double, at index: Int32) {
        sqlite3_bind_double(handle, index, value)
    }
}
