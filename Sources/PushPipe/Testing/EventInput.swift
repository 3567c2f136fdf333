import Foundation

/// An event written by hand: in `_test.yaml` cases and `pushpipe dry-run --event`.
///
/// `{"user": "alice", "body": {...}, "id": "optional", "time": "2026-01-01T12:00:00Z" or UNIX seconds}`
public enum EventInput {
    public static let valueType: ValueType = .object(Schema([
        SchemaKey("user", .string, "Recipient user; omit to send to every registered user."),
        SchemaKey("id", .string, "Event id; fixed ids make rendered payloads reproducible."),
        SchemaKey("time", .any, "ISO 8601 time or UNIX seconds; now when omitted."),
        SchemaKey("body", .any, default: [:], "The event's JSON body."),
    ]))

    public static func event(from json: JSON, pipeline: String) throws -> Event {
        var time = Date()
        switch json["time"] {
        case .string(let text)?:
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = text.contains(".") ? [.withInternetDateTime, .withFractionalSeconds] : [.withInternetDateTime]
            guard let parsed = formatter.date(from: text) else { throw HTTPError.badRequest("time '\(text)' is not ISO 8601", field: "time") }
            time = parsed
        case let value? where value.doubleValue != nil:
            time = Date(timeIntervalSince1970: value.doubleValue!)
        case nil, .null?:
            break
        default:
            throw HTTPError.badRequest("time must be ISO 8601 text or UNIX seconds", field: "time")
        }
        return Event(id: json["id"]?.textValue ?? Event.makeID(), pipeline: pipeline, user: json["user"]?.textValue, time: time,
                     body: json["body"] ?? .object([:]))
    }
}
