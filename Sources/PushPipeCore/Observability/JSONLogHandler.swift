import Foundation
import Logging

/// `--log-format json`: one JSON object per line on standard error, for log shippers (Vector,
/// Fluent Bit, Loki). The metadata the runtime sets — `pipeline`, `stage`, `event`, `token`
/// (already masked) — become top-level fields.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    let label: String
    let write: @Sendable (String) -> Void

    public init(label: String, write: @escaping @Sendable (String) -> Void = JSONLogHandler.standardError) {
        self.label = label
        self.write = write
    }

    public static let standardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data(line.utf8))
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields: [String: JSON] = [:]
        for (key, value) in metadata { fields[key] = Self.json(value) }
        for (key, value) in event.metadata ?? [:] { fields[key] = Self.json(value) }
        if let error = event.error { fields["error"] = .string("\(error)") }
        fields["time"] = .string(Self.timestamp(Date()))
        fields["level"] = .string(event.level.rawValue)
        fields["label"] = .string(label)
        fields["message"] = .string(event.message.description)
        write(JSON.object(fields).compactText + "\n")
    }

    static func json(_ value: Logger.Metadata.Value) -> JSON {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .array(let values): .array(values.map(json))
        case .dictionary(let members): .object(members.mapValues(json))
        }
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
