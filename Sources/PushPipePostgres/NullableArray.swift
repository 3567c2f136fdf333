import NIOCore
import PostgresNIO
import PushPipeCore

/// An array whose elements may be NULL, bound in PostgreSQL's binary array format: columns for
/// `unnest`, which PostgreSQL reads faster than the same rows as JSON, and which cost no JSON
/// document to build. PostgresNIO's arrays have no NULL elements.
struct NullableArray<Element: PostgresArrayEncodable & PostgresNonThrowingEncodable>: PostgresNonThrowingEncodable {
    private var elements: [Element?]

    static var psqlType: PostgresDataType { Element.psqlArrayType }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        // Dimensions, whether any element is NULL, the element type; then the one dimension's
        // length and lower bound, and each element as its length (-1: NULL) and bytes.
        buffer.writeInteger(elements.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(elements.contains(where: { $0 == nil }) ? 1 : 0, as: Int32.self)
        buffer.writeInteger(Element.psqlType.rawValue)
        guard !elements.isEmpty else { return }
        buffer.writeInteger(Int32(elements.count))
        buffer.writeInteger(1, as: Int32.self)
        for element in elements {
            guard let element else {
                buffer.writeInteger(-1, as: Int32.self)
                continue
            }
            let lengthAt = buffer.writerIndex
            buffer.writeInteger(0, as: Int32.self)
            element.encode(into: &buffer, context: context)
            buffer.setInteger(Int32(buffer.writerIndex - lengthAt - 4), at: lengthAt)
        }
    }
}

extension NullableArray where Element == String {
    /// Each text made storable (`StoredText`), as every string this module binds is.
    init(_ texts: [String?]) {
        elements = texts.map { $0.map { StoredText.storable($0) } }
    }
}

extension NullableArray where Element == Double {
    /// Times: one that is not finite is NULL, which a NOT NULL column refuses (SQLSTATE 23502),
    /// as it refused the `null` such a time became in JSON, instead of storing NaN.
    init(times: [Double]) {
        elements = times.map { $0.isFinite ? $0 : nil }
    }
}
