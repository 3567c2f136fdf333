import Foundation
import Mustache
import PushPipe

/// A JSON skeleton from YAML whose strings may be Mustache templates.
///
/// - A string containing `{{` is rendered as text (no HTML escaping: this is JSON, not HTML).
/// - `{$from: path}` copies the value at `path` keeping its JSON type (a number stays a
///   number); `$default` gives the value when the path is missing, otherwise the key is omitted.
/// - `{$switch: value, cases: {a: ..., b: ...}, default: ...}` picks by the rendered text of
///   `value` (a template or a `$from`); without a matching case or default the key is omitted.
/// - Everything else is copied as it is.
public indirect enum JSONTemplate: Sendable {
    case literal(JSON)
    case text(MustacheTemplate)
    case variable(path: JSONPath)
    case reference(path: JSONPath, defaultValue: JSON?)
    case choice(value: JSONTemplate, cases: [String: JSONTemplate], defaultCase: JSONTemplate?)
    case array([JSONTemplate])
    case object([(key: String, value: JSONTemplate)])

    /// Templates render JSON strings, not HTML: no escaping of `<`, `&` or quotes.
    static let textPragma = "{{% CONTENT_TYPE: TEXT}}"

    public init(compiling json: JSON, keyPath: String) throws {
        switch json {
        case .string(let string) where Self.singleVariable(in: string) != nil:
            // `{{field}}` alone: the value's text, without running Mustache.
            self = .variable(path: JSONPath(Self.singleVariable(in: string)!))
        case .string(let string) where string.contains("{{"):
            do {
                self = .text(try MustacheTemplate(string: Self.textPragma + string))
            } catch let error as MustacheTemplate.ParserError {
                let column = max(1, error.context.columnNumber - Self.textPragma.count)
                throw ConfigurationValueError(keyPath: keyPath, "template does not parse: \(error.error) near character \(column)",
                                              expected: "a Mustache template, e.g. \"It's your turn in {{game_name}}\"")
            } catch {
                throw ConfigurationValueError(keyPath: keyPath, "template does not parse: \(error)", expected: "a Mustache template")
            }
        case .object(let members) where members["$switch"] != nil:
            let unknown = members.keys.filter { !["$switch", "cases", "default"].contains($0) }
            guard unknown.isEmpty else {
                throw ConfigurationValueError(keyPath: "\(keyPath).\(unknown.sorted()[0])", "unknown key next to '$switch'", expected: "$switch, cases, default")
            }
            guard let cases = (members["cases"] ?? [:]).objectValue else {
                throw ConfigurationValueError(keyPath: "\(keyPath).cases", "cases must map values to templates", expected: "a mapping")
            }
            self = .choice(
                value: try JSONTemplate(compiling: members["$switch"]!, keyPath: "\(keyPath).$switch"),
                cases: try cases.mapValues { try JSONTemplate(compiling: $0, keyPath: "\(keyPath).cases") },
                defaultCase: try members["default"].map { try JSONTemplate(compiling: $0, keyPath: "\(keyPath).default") })
        case .object(let members) where members["$from"] != nil:
            guard let path = members["$from"]?.stringValue, !path.isEmpty else {
                throw ConfigurationValueError(keyPath: "\(keyPath).$from", "'$from' must name a field", expected: "a path such as games[0].id")
            }
            let unknown = members.keys.filter { $0 != "$from" && $0 != "$default" }
            guard unknown.isEmpty else {
                throw ConfigurationValueError(keyPath: "\(keyPath).\(unknown.sorted()[0])", "unknown key next to '$from'", expected: "$from, $default")
            }
            self = .reference(path: JSONPath(path), defaultValue: members["$default"])
        case .object(let members):
            self = .object(try members.sorted { $0.key < $1.key }.map { key, value in
                (key, try JSONTemplate(compiling: value, keyPath: keyPath.isEmpty ? key : "\(keyPath).\(key)"))
            })
        case .array(let elements):
            self = .array(try elements.enumerated().map { try JSONTemplate(compiling: $1, keyPath: "\(keyPath)[\($0)]") })
        default:
            self = .literal(json)
        }
    }

    /// The path of a template that is exactly one `{{name.path}}` (letters, digits, `_`, `.`).
    static func singleVariable(in template: String) -> String? {
        guard template.hasPrefix("{{"), template.hasSuffix("}}"), template.count > 4 else { return nil }
        let inner = template.dropFirst(2).dropLast(2).trimmingCharacters(in: .whitespaces)
        guard let first = inner.first, first.isLetter || first == "_",
              inner.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." }) else { return nil }
        return inner
    }

    /// `nil` means "leave this key out".
    public func render(_ context: TemplateContext) -> JSON? {
        switch self {
        case .literal(let json):
            return json
        case .text(let template):
            return .string(template.render(context.foundation))
        case .variable(let path):
            return .string(context.value(at: path)?.textValue ?? "")
        case .reference(let path, let defaultValue):
            guard let value = context.value(at: path) else { return defaultValue }
            return value
        case .choice(let value, let cases, let defaultCase):
            let key = value.render(context)?.textValue ?? ""
            return (cases[key] ?? defaultCase)?.render(context)
        case .array(let elements):
            return .array(elements.map { $0.render(context) ?? .null })
        case .object(let members):
            var result: [String: JSON] = [:]
            result.reserveCapacity(members.count) // grown one key at a time it reallocates on the way
            for (key, template) in members {
                if let value = template.render(context) { result[key] = value }
            }
            return .object(result)
        }
    }
}

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
        case .array(let elements): TemplateList(elements: elements.map(templateValue))
        case .object(let members): members.mapValues(templateValue)
        default: json.foundationValue
        }
    }
}
