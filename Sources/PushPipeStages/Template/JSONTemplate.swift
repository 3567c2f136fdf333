import Foundation
import Mustache
import PushPipeCore

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
    /// Text and `{{name.path}}` tags only (most templates): rendered without running Mustache,
    /// which is kept for values only it renders (see `JSONTemplate+Interpolation`).
    case interpolation([InterpolationPart], mustache: MustacheTemplate)
    case reference(path: JSONPath, defaultValue: JSON?)
    case choice(value: JSONTemplate, cases: [String: JSONTemplate], defaultCase: JSONTemplate?)
    case array([JSONTemplate])
    case object([(key: String, value: JSONTemplate)])

    /// Templates render JSON strings, not HTML: no escaping of `<`, `&` or quotes. On a line of
    /// its own, which Mustache removes whole: right before the template, whitespace that
    /// began it (up to its first line break) made the pragma's line "standalone" and went too.
    static let textPragma = "{{% CONTENT_TYPE: TEXT}}\n"

    public init(compiling json: JSON, keyPath: String) throws {
        switch json {
        case .string(let string) where string.contains("{{"):
            do {
                let mustache = try MustacheTemplate(string: Self.textPragma + string)
                self = Self.interpolationParts(of: string).map { .interpolation($0, mustache: mustache) } ?? .text(mustache)
            } catch let error as MustacheTemplate.ParserError {
                let column = max(1, error.context.columnNumber)
                throw ConfigurationValueError(
                    keyPath: keyPath,
                    "template does not parse: \(error.error) near character \(column)",
                    expected: "a Mustache template, e.g. \"It's your turn in {{game_name}}\""
                )
            } catch {
                throw ConfigurationValueError(keyPath: keyPath, "template does not parse: \(error)", expected: "a Mustache template")
            }
        case .object(let members) where members["$switch"] != nil:
            let unknown = members.keys.filter { !["$switch", "cases", "default"].contains($0) }
            guard unknown.isEmpty else {
                throw ConfigurationValueError(
                    keyPath: "\(keyPath).\(unknown.sorted()[0])",
                    "unknown key next to '$switch'",
                    expected: "$switch, cases, default"
                )
            }
            guard let cases = (members["cases"] ?? [:]).objectValue else {
                throw ConfigurationValueError(keyPath: "\(keyPath).cases", "cases must map values to templates", expected: "a mapping")
            }
            self = .choice(
                value: try JSONTemplate(compiling: members["$switch"]!, keyPath: "\(keyPath).$switch"),
                cases: try cases.mapValues { try JSONTemplate(compiling: $0, keyPath: "\(keyPath).cases") },
                defaultCase: try members["default"].map { try JSONTemplate(compiling: $0, keyPath: "\(keyPath).default") }
            )
        case .object(let members) where members["$from"] != nil:
            guard let path = members["$from"]?.stringValue, !path.isEmpty else {
                throw ConfigurationValueError(keyPath: "\(keyPath).$from", "'$from' must name a field", expected: "a path such as games[0].id")
            }
            let unknown = members.keys.filter { $0 != "$from" && $0 != "$default" }
            guard unknown.isEmpty else {
                throw ConfigurationValueError(
                    keyPath: "\(keyPath).\(unknown.sorted()[0])",
                    "unknown key next to '$from'",
                    expected: "$from, $default"
                )
            }
            self = .reference(path: JSONPath(path), defaultValue: members["$default"])
        case .object(let members):
            self = .object(
                try members.sorted { $0.key < $1.key }.map { key, value in
                    (key, try JSONTemplate(compiling: value, keyPath: keyPath.isEmpty ? key : "\(keyPath).\(key)"))
                }
            )
        case .array(let elements):
            self = .array(try elements.enumerated().map { try JSONTemplate(compiling: $1, keyPath: "\(keyPath)[\($0)]") })
        default:
            self = .literal(json)
        }
    }

    /// `nil` means "leave this key out".
    public func render(_ context: TemplateContext) -> JSON? {
        switch self {
        case .literal(let json):
            return json
        case .text(let template):
            return .string(template.render(context.foundation))
        case .interpolation(let parts, let mustache):
            return .string(Self.interpolate(parts, context) ?? mustache.render(context.foundation))
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
            result.reserveCapacity(members.count)  // grown one key at a time it reallocates on the way
            for (key, template) in members {
                if let value = template.render(context) { result[key] = value }
            }
            return .object(result)
        }
    }
}
