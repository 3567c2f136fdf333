/// The store refused a write for what it holds (a value it cannot keep, a broken constraint),
/// not for being away: the same write fails the same way every time, so nothing retries it.
/// Each store makes one from its own error where it enters (PostgreSQL's SQLSTATE classes 22,
/// 23 and 54, SQLite's constraint, size and type errors), so callers decide on the type, not
/// on the wording of a message.
public struct StoreDataError: Error, CustomStringConvertible {
    /// Which store: "PostgreSQL" or "SQLite".
    public var store: String
    /// The store's code: a SQLSTATE (`22P05`) or SQLite's extended result code (`SQLITE_CONSTRAINT_NOTNULL`).
    public var code: String
    /// The store's message, without the statement or its values.
    public var message: String

    public init(store: String, code: String, message: String) {
        self.store = store
        self.code = code
        self.message = message
    }

    public var description: String { "the store (\(store)) refused the data (\(code)): \(message)" }
}
