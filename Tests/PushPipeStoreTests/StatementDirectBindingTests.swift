import Foundation
import GRDB
import GRDBSQLite
import PushPipeTesting
import Testing

@testable import PushPipeSQLite

/// The deliveries insert binds its values through SQLite's C API (`executeBinding`) instead of
/// GRDB's arguments: every kind of value must arrive as GRDB would have stored it, nothing of
/// one row may leak into the next, and a failing statement must throw and stay usable.
@Suite struct StatementDirectBindingTests {
    func database() throws -> (DatabaseQueue, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        let queue = try DatabaseQueue(path: directory.file("bindings.sqlite"))
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, text TEXT, number INTEGER, real DOUBLE, bytes TEXT, required TEXT NOT NULL)")
        }
        return (queue, directory)
    }

    static let insert = "INSERT INTO t (text, number, real, bytes, required) VALUES (?, ?, ?, ?, ?)"

    @Test func valuesArriveAsGRDBWouldStoreThem() throws {
        let (queue, directory) = try database()
        defer { directory.remove() }
        let payload = Data(#"{"aps":{"alert":"Zürich → 東京 \"quoted\""}}"#.utf8)
        try queue.write { db in
            try db.cachedStatement(sql: Self.insert).executeBinding { values in
                values.bind("héllo wörld", at: 1)
                values.bind(-42, at: 2)
                values.bind(1_758_474_790.961, at: 3)
                values.bindText(payload, at: 4)
                values.bind("x", at: 5)
            }
            // The same statement again: nulls, an empty text and empty bytes replace every value.
            try db.cachedStatement(sql: Self.insert).executeBinding { values in
                values.bind(nil as String?, at: 1)
                values.bind(Int.max, at: 2)
                values.bind(0.0, at: 3)
                values.bindText(Data(), at: 4)
                values.bind("", at: 5)
            }
        }
        let rows = try queue.read { db in try Row.fetchAll(db, sql: "SELECT * FROM t ORDER BY id") }
        #expect(rows.count == 2)
        #expect(rows[0]["text"] as String? == "héllo wörld")
        #expect(rows[0]["number"] as Int? == -42)
        #expect(rows[0]["real"] as Double? == 1_758_474_790.961)
        #expect(rows[0]["bytes"] as String? == String(decoding: payload, as: UTF8.self))
        #expect(rows[1]["text"] as String? == nil)
        #expect(rows[1]["number"] as Int? == Int.max)
        #expect(rows[1]["bytes"] as String? == "")
        #expect(rows[1]["required"] as String? == "")
        // Text, not blobs: the history route reads the record back as a string.
        let types = try queue.read { db in try String.fetchAll(db, sql: "SELECT typeof(bytes) FROM t ORDER BY id") }
        #expect(types == ["text", "text"])
    }

    @Test func aFailingStatementThrowsAndStaysUsable() throws {
        let (queue, directory) = try database()
        defer { directory.remove() }
        try queue.write { db in
            let failure = #expect(throws: DatabaseError.self) {
                try db.cachedStatement(sql: Self.insert).executeBinding { values in
                    values.bind("a", at: 1)
                    values.bind(1, at: 2)
                    values.bind(1.0, at: 3)
                    values.bindText(Data("b".utf8), at: 4)
                    values.bind(nil as String?, at: 5)
                }
            }
            #expect(failure?.resultCode == .SQLITE_CONSTRAINT)
            #expect(failure?.sql?.contains("INSERT INTO t") == true)
            try db.cachedStatement(sql: Self.insert).executeBinding { values in
                values.bind("c", at: 1)
                values.bind(2, at: 2)
                values.bind(2.0, at: 3)
                values.bindText(Data("d".utf8), at: 4)
                values.bind("e", at: 5)
            }
        }
        let texts = try queue.read { db in try String.fetchAll(db, sql: "SELECT text FROM t") }
        #expect(texts == ["c"])
    }

    /// Texts are bound from a buffer on the stack, and longer ones as copies: both must arrive
    /// whole, and no binding may point into the buffer once the call returned.
    @Test func longTextsArriveWholeAndNoBindingOutlivesTheCall() throws {
        let (queue, directory) = try database()
        defer { directory.remove() }
        let long = String(repeating: "0123456789", count: DirectBindings.scratchBytes / 5)
        try queue.write { db in
            try db.cachedStatement(sql: Self.insert).executeBinding { values in
                values.bind("short", at: 1)
                values.bind(7, at: 2)
                values.bind(7.5, at: 3)
                values.bindText(Data(long.utf8), at: 4)
                values.bind(long, at: 5)
            }
            // Stepped again with whatever is still bound: nothing, so NULL breaks NOT NULL
            // (without the clearing, a second row went in from the dead buffer).
            let statement = try db.cachedStatement(sql: Self.insert).sqliteStatement
            sqlite3_reset(statement)
            #expect(sqlite3_step(statement) & 0xFF == SQLITE_CONSTRAINT)
            sqlite3_reset(statement)
        }
        let row = try #require(try queue.read { db in try Row.fetchOne(db, sql: "SELECT * FROM t") })
        #expect(row["text"] as String? == "short")
        #expect(row["bytes"] as String? == long)
        #expect(row["required"] as String? == long)
    }
}
