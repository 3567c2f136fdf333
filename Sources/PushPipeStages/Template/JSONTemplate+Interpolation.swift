import Foundation
import PushPipe

/// Most templates are text with `{{name.path}}` tags: titles, bodies, URLs. Running Mustache
/// for them meant converting the whole event to Foundation values and casting each value at
/// each lookup, for every notification (a third of an OGS check's rendering). They are
/// rendered here instead, as Mustache renders them, and Mustache stays for the rest.
extension JSONTemplate {
    public enum InterpolationPart: Sendable, Equatable {
        case text(String)
        /// A dotted Mustache name, split at the dots.
        case name([String])
    }

    /// The parts of a template made only of text and `{{name}}` tags whose names are letters,
    /// digits, `_` and dots; nil when it uses anything else of Mustache (sections, inverted
    /// sections, transforms such as `truncate100(text)`, comments, partials, triple braces).
    static func interpolationParts(of template: String) -> [InterpolationPart]? {
        var parts: [InterpolationPart] = []
        var rest = Substring(template)
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex { parts.append(.text(String(rest[..<open.lowerBound]))) }
            guard let close = rest[open.upperBound...].range(of: "}}") else { return nil }
            let name = rest[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespaces)
            guard let first = name.first, first.isLetter || first == "_",
                  name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." }) else { return nil }
            let names = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !names.contains("") else { return nil }
            parts.append(.name(names))
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { parts.append(.text(String(rest))) }
        return parts
    }

    /// The rendered text; nil when a value is one whose text Mustache makes its own way
    /// (a number with a fraction, a list, an object): the template then runs in Mustache.
    static func interpolate(_ parts: [InterpolationPart], _ context: TemplateContext) -> String? {
        var text = ""
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
                case .double?, .array?, .object?: return nil
                }
            }
        }
        return text
    }
}
