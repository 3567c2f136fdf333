import PostgresNIO
import PushPipeCore

/// Every string this module binds to a statement goes through here (`StoredText`): PostgreSQL
/// refuses NUL in text (SQLSTATE 22021) and `\u0000` in `jsonb` (22P05), and one such value
/// would fail the whole group commit it is in. Swift picks these overloads over PostgresNIO's
/// generic ones for a `String`, so no statement of the store can bind one unchecked; a read
/// binds the value as a write stored it, and finds it.
extension PostgresQuery.StringInterpolation {
    mutating func appendInterpolation(_ value: String) {
        bind(StoredText.storable(value))
    }

    mutating func appendInterpolation(_ value: String?) {
        bind(StoredText.storable(value))
    }

    mutating func appendInterpolation(_ values: [String]) {
        bind(values.map { StoredText.storable($0) })
    }

    /// Rows for `jsonb_to_recordset` (`\(jsonb: rows)::jsonb`): one JSON array, with NUL in any
    /// of its strings replaced.
    mutating func appendInterpolation(jsonb rows: [JSON]) {
        bind(StoredText.storableJSON(JSON.array(rows).compactText))
    }

    /// PostgresNIO's own binding: in a generic context only its generic overloads apply.
    private mutating func bind<Value: PostgresDynamicTypeEncodable>(_ value: Value) {
        appendInterpolation(value)
    }

    private mutating func bind<Value: PostgresDynamicTypeEncodable>(_ value: Value?) {
        appendInterpolation(value)
    }
}
