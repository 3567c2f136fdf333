import GRDB
import PushPipeCore

extension StatementArguments {
    /// Arguments with each string made storable (`StoredText`): SQLite keeps a NUL, but every
    /// read of the column stops at it, and the same value on PostgreSQL failed its write.
    static func storable(_ values: [(any DatabaseValueConvertible)?]) -> StatementArguments {
        StatementArguments(
            values.map { value -> (any DatabaseValueConvertible)? in
                guard let text = value as? String else { return value }
                return StoredText.storable(text) as String
            }
        )
    }
}

extension SQLiteStore {
    /// SQLite refused the write's data: a broken constraint (a NaN bound as NULL into a
    /// `NOT NULL` column), a value too big, a type mismatch. The same write fails the same way
    /// again, so it is told as such, once, where the group commit's error enters.
    static func dataError(in error: any Error) -> StoreDataError? {
        guard let error = error as? DatabaseError else { return nil }
        let name: String
        switch error.resultCode {
        case .SQLITE_CONSTRAINT: name = "SQLITE_CONSTRAINT"
        case .SQLITE_TOOBIG: name = "SQLITE_TOOBIG"
        case .SQLITE_MISMATCH: name = "SQLITE_MISMATCH"
        default: return nil
        }
        return StoreDataError(store: "SQLite", code: "\(name) (\(error.extendedResultCode.rawValue))", message: error.message ?? "")
    }
}
