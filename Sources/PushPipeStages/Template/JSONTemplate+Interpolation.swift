import Foundation
import PushPipeCore

/// Most templates are text with `{{name.path}}` tags, some with a `{{#single(games)}}` kind of
/// section: titles, bodies, URLs. Running Mustache for them meant converting the whole event
/// to Foundation values and casting each value at each lookup, for every notification (most
/// of an OGS check's rendering). They are rendered here instead, as Mustache renders them, and
/// Mustache stays for the rest.
extension JSONTemplate {
    public indirect enum InterpolationPart: Sendable, Equatable {
        case text(String)
        /// A dotted Mustache name, split at the dots.
        case name([String])
        /// `{{#single(games)}}…{{/single(games)}}` and the like (`TemplateList`'s conditions).
        case section(ListCondition, list: [String], [InterpolationPart])
    }

    public enum ListCondition: String, Sendable {
        case single, many, empty
    }

    /// The parts of a template made only of text, `{{name}}` tags whose names are letters,
    /// digits, `_` and dots, and list-condition sections; nil when it uses anything else of
    /// Mustache (other sections, inverted sections, transforms such as `truncate100(text)`,
    /// comments, partials, triple braces), or sections on several lines (Mustache removes the
    /// lines a section tag stands alone on).
    static func interpolationParts(of template: String) -> [InterpolationPart]? {
        var rest = Substring(template)
        guard let parts = parts(of: &rest, closedBy: nil), rest.isEmpty else { return nil }
        if template.contains(where: \.isNewline), parts.contains(where: { if case .section = $0 { true } else { false } }) { return nil }
        return parts
    }

    private static func parts(of rest: inout Substring, closedBy closing: String?) -> [InterpolationPart]? {
        var parts: [InterpolationPart] = []
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex { parts.append(.text(String(rest[..<open.lowerBound]))) }
            guard let close = rest[open.upperBound...].range(of: "}}") else { return nil }
            let tag = rest[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespaces)
            rest = rest[close.upperBound...]
            if tag.hasPrefix("/") {
                return String(tag.dropFirst()).trimmingCharacters(in: .whitespaces) == closing ? parts : nil
            }
            if tag.hasPrefix("#") {
                let call = String(tag.dropFirst()).trimmingCharacters(in: .whitespaces)
                guard call.hasSuffix(")"), let parenthesis = call.firstIndex(of: "("),
                    let condition = ListCondition(rawValue: String(call[..<parenthesis])),
                    let list = names(in: String(call[call.index(after: parenthesis)..<call.index(before: call.endIndex)])),
                    let inner = Self.parts(of: &rest, closedBy: call)
                else { return nil }
                parts.append(.section(condition, list: list, inner))
                continue
            }
            guard let names = names(in: tag) else { return nil }
            parts.append(.name(names))
        }
        guard closing == nil else { return nil }
        if !rest.isEmpty { parts.append(.text(String(rest))) }
        rest = rest[rest.endIndex...]
        return parts
    }

    private static func names(in tag: String) -> [String]? {
        guard let first = tag.first, first.isLetter || first == "_",
            tag.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." })
        else { return nil }
        let names = tag.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        return names.contains("") ? nil : names
    }

    /// The rendered text; nil when a value is one whose text Mustache makes its own way
    /// (a number with a fraction, a list, an object) or a section's value is not a list: the
    /// template then runs in Mustache.
    static func interpolate(_ parts: [InterpolationPart], _ context: TemplateContext) -> String? {
        var text = ""
        return append(parts, context, to: &text) ? text : nil
    }

    private static func append(_ parts: [InterpolationPart], _ context: TemplateContext, to text: inout String) -> Bool {
        for part in parts {
            switch part {
            case .text(let literal):
                text += literal
            case .name(let names):
                switch context.value(named: names) {
                case nil, .null?: break
                case .string(let value)?: text += value
                case .int(let value)?: text += String(value)
                case .bool(let value)?: text += value ? "true" : "false"
                case .double?, .array?, .object?: return false
                }
            case .section(let condition, let list, let inner):
                // A true condition renders its content in the same context (names inside
                // resolve as outside); a missing list hides it, as in Mustache.
                switch context.value(named: list) {
                case nil, .null?: continue
                case .array(let elements)?:
                    let holds =
                        switch condition {
                        case .single: elements.count == 1
                        case .many: elements.count > 1
                        case .empty: elements.isEmpty
                        }
                    if holds, !append(inner, context, to: &text) { return false }
                default:
                    return false
                }
            }
        }
        return true
    }
}
