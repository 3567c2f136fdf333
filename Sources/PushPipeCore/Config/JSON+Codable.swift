import Foundation

extension JSON: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSON].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// How deep a document from outside may nest (a request body, a reply file, a plugin's
    /// message): bounded so hostile input cannot exhaust the stack, and shallower than what the
    /// store reads back, so everything accepted can be kept inside the daemon's own documents.
    public static let acceptedDepth = 256
    /// How deep what the daemon stores may nest: deeper than anything it accepts, since it
    /// keeps an accepted document inside its own (a queued event's item, an event record's
    /// input) and must read it back.
    public static let storedDepth = 512

    /// Parses JSON text; throws `JSONParseError` with a readable reason and position. Nesting is
    /// bounded by `maximumDepth`: `acceptedDepth` for what comes from outside.
    public static func parse(_ data: some DataProtocol, maximumDepth: Int = JSON.storedDepth) throws -> JSON {
        try parse(data, selecting: .everything, maximumDepth: maximumDepth)
    }

    /// Parses only the selected parts; the rest is checked for structure and skipped.
    public static func parse(_ data: some DataProtocol, selecting selection: JSONSelection, maximumDepth: Int = JSON.storedDepth) throws -> JSON {
        // A contiguous buffer (an HTTP body, `Data`) is read where it lies; anything else is copied once.
        if let value = try data.withContiguousStorageIfAvailable({ try JSONParser.parse($0, selecting: selection, maximumDepth: maximumDepth) }) {
            return value
        }
        return try Array(data).withUnsafeBufferPointer { try JSONParser.parse($0, selecting: selection, maximumDepth: maximumDepth) }
    }

    /// Read in the string's own UTF-8, not a copy of it.
    public static func parse(_ text: String) throws -> JSON {
        var text = text
        return try text.withUTF8 { try JSONParser.parse($0, selecting: .everything) }
    }

    /// Deterministic serialisation: sorted keys, no escaped slashes, so that
    /// a dry run, a pipeline test and the wire all show the same bytes.
    public func serialized(pretty: Bool = false) -> Data {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(to: &output, pretty: pretty, indent: 0)
        return Data(output)
    }

    /// Decoded from the written bytes themselves: through `Data` it would be copied twice.
    public var compactText: String { text(pretty: false) }
    public var prettyText: String { text(pretty: true) }

    private func text(pretty: Bool) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(to: &output, pretty: pretty, indent: 0)
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes a `Decodable` type from this value.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: serialized())
    }

    /// Encodes an `Encodable` value into a JSON value.
    public init(encoding value: some Encodable) throws {
        self = try JSON.parse(JSONEncoder().encode(value))
    }
}

public struct JSONParseError: Error, CustomStringConvertible {
    public var reason: String
    public var description: String { "malformed JSON: \(reason)" }
}
