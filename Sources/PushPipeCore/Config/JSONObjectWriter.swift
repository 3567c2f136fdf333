/// Writes one JSON object straight to bytes, members in the order they are added: for the
/// rows written per event (an event's record), where building a `JSON` value first (a
/// dictionary per object, its keys sorted at serialization) cost more than the row's insert.
public struct JSONObjectWriter {
    public private(set) var bytes: [UInt8]
    private var empty = true

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes.append(UInt8(ascii: "{"))
    }

    private mutating func key(_ key: String) {
        if !empty { bytes.append(UInt8(ascii: ",")) }
        empty = false
        JSON.writeString(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Leaves the member out when `value` is nil.
    public mutating func add(_ name: String, _ value: String?) {
        guard let value else { return }
        key(name)
        JSON.writeString(value, to: &bytes)
    }

    public mutating func add(_ name: String, _ value: Double) {
        key(name)
        bytes.append(contentsOf: (value.isFinite ? JSON.format(value) : "null").utf8)
    }

    public mutating func add(_ name: String, _ value: Int) {
        key(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func add(_ name: String, json value: JSON) {
        key(name)
        value.write(to: &bytes, pretty: false, indent: 0)
    }

    /// An array of objects, each written by `element` into the same bytes.
    public mutating func add<Element>(_ name: String, objects: [Element], _ element: (Element, inout JSONObjectWriter) -> Void) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (index, item) in objects.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "{"))
            empty = true
            element(item, &self)
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(UInt8(ascii: "]"))
        empty = false
    }

    /// The object's bytes, closed.
    public consuming func finished() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }
}
