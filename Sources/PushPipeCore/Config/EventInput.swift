import Foundation

/// An event written by hand: in `_test.yaml` cases and `pushpipe dry-run --event`.
///
/// `{"user": "alice", "body": {...}, "id": "optional", "time": "2026-01-01T12:00:00Z" or UNIX seconds}`
public enum EventInput {
    public static let valueType: ValueType = .object(
        Schema([
            SchemaKey("user", .string, "Recipient user; omit to send to every registered user."),
            SchemaKey("id", .string, "Event id; fixed ids make rendered payloads reproducible."),
            SchemaKey("time", .any, "ISO 8601 time or UNIX seconds; now when omitted."),
            SchemaKey("body", .any, default: [:], "The event's JSON body."),
        ])
    )

    public static func event(from json: JSON, pipeline: String) throws -> Event {
        var time = Date()
        switch json["time"] {
        case .string(let text)?:
            guard let parsed = parseISO8601(text) else { throw RouteError.badRequest("time '\(text)' is not ISO 8601", field: "time") }
            time = parsed
        case let value? where value.doubleValue != nil:
            guard let seconds = value.doubleValue, (0...32_503_680_000).contains(seconds) else {
                throw RouteError.badRequest("time must be UNIX seconds between 1970 and 3000", field: "time")
            }
            time = Date(timeIntervalSince1970: seconds)
        case nil, .null?:
            break
        default:
            throw RouteError.badRequest("time must be ISO 8601 text or UNIX seconds", field: "time")
        }
        return Event(
            id: json["id"]?.textValue ?? Event.makeID(),
            pipeline: pipeline,
            user: json["user"]?.textValue,
            time: time,
            body: json["body"] ?? .object([:])
        )
    }

    /// ISO 8601 keeping every fractional digit (Foundation's formatter stops at milliseconds,
    /// and Pong's timestamps carry microseconds).
    public static func parseISO8601(_ text: String) -> Date? {
        var base = text
        var fraction = 0.0
        if let dot = text.firstIndex(of: ".") {
            let digits = text[text.index(after: dot)...].prefix { $0.isNumber }
            fraction = Double("0." + digits) ?? 0
            base = String(text[..<dot]) + String(text[text.index(after: dot)...].dropFirst(digits.count))
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: base).map { $0.addingTimeInterval(fraction) }
    }
}
