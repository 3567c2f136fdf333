import Foundation
import PushPipeCore

/// What templates see: the event body's fields at the top level, `event` with the
/// metadata (`id`, `user`, `time` in UNIX seconds, `time_ms`, `time_iso`, `time_iso_micro`), and `vars`, the
/// renderer's own computed values.
///
/// Nothing is copied or formatted up front: a path looks in the body, the metadata or `vars`
/// by its first key, and the metadata and the whole (for Mustache) are made on first use.
public struct TemplateContext: @unchecked Sendable {
    private let event: Event
    private let body: [String: JSON]
    private let computed: [String: JSON]
    private let lazy = LazyParts()

    final class LazyParts {
        var metadata: JSON?
        var json: JSON?
        var foundation: Any?
    }

    /// - Parameter vars: computed from the event alone (they do not see each other).
    public init(event: Event, vars: [String: JSONTemplate] = [:]) {
        guard !vars.isEmpty else {
            self.init(event: event, computed: [:])
            return
        }
        let base = TemplateContext(event: event, computed: [:])
        self.init(event: event, computed: vars.mapValues { $0.render(base) ?? .null })
    }

    private init(event: Event, computed: [String: JSON]) {
        self.event = event
        body = event.body.objectValue ?? ["body": event.body]
        self.computed = computed
    }

    public func value(at path: JSONPath) -> JSON? {
        switch path.components.first {
        case .key("event"): metadata.value(at: path.rest)
        case .key("vars") where !computed.isEmpty: JSON.object(computed).value(at: path.rest)
        case .key(let key): body[key]?.value(at: path.rest)
        default: nil
        }
    }

    /// The value of a Mustache name as Mustache finds it in `foundation`: an object's member,
    /// a list's element by its index (`games.0`) or its `count`.
    func value(named names: [String]) -> JSON? {
        guard let first = names.first else { return nil }
        var value: JSON? =
            switch first {
            case "event": metadata
            case "vars" where !computed.isEmpty: .object(computed)
            default: body[first]
            }
        for name in names.dropFirst() {
            switch value {
            case .object(let members)?:
                value = members[name]
            case .array(let elements)?:
                if name == "count" {
                    value = .int(Int64(elements.count))
                } else if let index = Int(name), elements.indices.contains(index) {
                    value = elements[index]
                } else {
                    value = nil
                }
            default:
                value = nil
            }
        }
        return value
    }

    /// Everything as one object, as Mustache and tests see it.
    public var json: JSON {
        if let json = lazy.json { return json }
        var members = body
        if !computed.isEmpty { members["vars"] = .object(computed) }
        members["event"] = metadata
        let json = JSON.object(members)
        lazy.json = json
        return json
    }

    /// The Foundation form Mustache needs, made on first use: many payloads use no Mustache at all.
    var foundation: Any {
        if let foundation = lazy.foundation { return foundation }
        let foundation = TemplateContext.templateValue(json)
        lazy.foundation = foundation
        return foundation
    }

    private var metadata: JSON {
        if let metadata = lazy.metadata { return metadata }
        let seconds = event.time.timeIntervalSince1970
        let milliseconds = Int64((seconds * 1000).rounded(.down))
        let metadata: JSON = [
            "id": .string(event.id),
            "user": event.user.map(JSON.string) ?? .null,
            "pipeline": .string(event.pipeline),
            "time": .int(Int64(seconds.rounded(.down))),
            "time_ms": .int(milliseconds),
            "time_iso": .string(UTCTimestamp.milliseconds(sinceEpoch: milliseconds)),
            // Rounded to the nearest microsecond: a Double holds 1.6e9 s only to about 0.1 µs.
            "time_iso_micro": .string(UTCTimestamp.microseconds(sinceEpoch: Int64((seconds * 1_000_000).rounded()))),
        ]
        lazy.metadata = metadata
        return metadata
    }

    /// Foundation values for Mustache, with strings wrapped so template functions apply.
    static func templateValue(_ json: JSON) -> Any {
        switch json {
        case .string(let value): TemplateText(value: value)
        // As an empty text: a null field shows as nothing and hides its sections (a nil in
        // `Any` rendered as "nil").
        case .null: TemplateText(value: "")
        case .array(let elements): TemplateList(elements: elements.map(templateValue))
        case .object(let members): members.mapValues(templateValue)
        default: json.foundationValue
        }
    }
}
