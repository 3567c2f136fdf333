import Foundation
import PushPipeCore

/// A tap record for people: time, where, what, and the rest compactly.
enum TapFormatter {
    static func readable(_ text: String) -> String {
        guard let record = try? JSON.parse(text), case .object(var fields) = record else { return text }
        let time =
            fields.removeValue(forKey: "time")?.doubleValue.map { Date(timeIntervalSince1970: $0) }
            .map { $0.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true).time(includingFractionalSeconds: true)) } ?? ""
        let pipeline = fields.removeValue(forKey: "pipeline")?.stringValue ?? ""
        let stage = fields.removeValue(forKey: "stage")?.stringValue ?? ""
        let what = fields.removeValue(forKey: "what")?.stringValue ?? ""
        fields.removeValue(forKey: "kind")
        let event = fields.removeValue(forKey: "event")?.stringValue.map { " event \($0)" } ?? ""
        let rest = fields.isEmpty ? "" : " " + JSON.object(fields).compactText
        return "\(time) \(pipeline) \(stage) \(what.uppercased())\(event)\(rest)"
    }
}
