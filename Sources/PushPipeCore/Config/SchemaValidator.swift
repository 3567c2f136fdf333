import Foundation
import Yams

/// Turns a YAML node into JSON while checking it against a `ValueType`, collecting every
/// problem with its position and key path. Defaults are filled in, environment variables
/// interpolated, and nothing is decoded until the whole tree is known to be valid.
public struct SchemaValidator {
    public var file: String
    public var interpolation: EnvironmentInterpolation
    public var diagnostics: [Diagnostic] = []

    public init(file: String, interpolation: EnvironmentInterpolation) {
        self.file = file
        self.interpolation = interpolation
    }

    public func location(of node: Node) -> SourceLocation {
        let mark = node.mark
        return SourceLocation(file: file, line: mark?.line ?? 1, column: mark?.column ?? 1)
    }

    public mutating func report(
        _ code: Diagnostic.Code,
        _ node: Node,
        _ path: String,
        _ message: String,
        expected: String? = nil,
        severity: Diagnostic.Severity = .error
    ) {
        diagnostics.append(Diagnostic(severity, code, at: location(of: node), keyPath: path, message, expected: expected))
    }

    /// Returns nil when the value is invalid (and diagnostics say why).
    public mutating func validate(_ node: Node, as type: ValueType, at path: String) -> JSON? {
        switch type {
        case .any:
            return plainValue(node, at: path)
        case .object(let schema):
            return validateObject(node, schema: schema, extraKeys: [], at: path)
        case .tagged(let tagged):
            return validateTagged(node, tagged, at: path)
        case .list(let element):
            guard case .sequence(let sequence) = node else {
                return wrongType(node, path, expected: type)
            }
            var elements: [JSON] = []
            var valid = true
            for (index, item) in sequence.enumerated() {
                if let value = validate(item, as: element, at: "\(path)[\(index)]") {
                    elements.append(value)
                } else {
                    valid = false
                }
            }
            return valid ? .array(elements) : nil
        case .map(let valueType):
            guard case .mapping(let mapping) = node else {
                return wrongType(node, path, expected: type)
            }
            var members: [String: JSON] = [:]
            var valid = true
            for (keyNode, valueNode) in mapping {
                let key = keyNode.string ?? ""
                if members[key] != nil {
                    report(.duplicateKey, keyNode, join(path, key), "key '\(key)' appears twice")
                    valid = false
                }
                if let value = validate(valueNode, as: valueType, at: join(path, key)) {
                    members[key] = value
                } else {
                    valid = false
                }
            }
            return valid ? .object(members) : nil
        case .string, .integer, .number, .boolean, .duration, .oneOf:
            return validateScalar(node, as: type, at: path)
        }
    }

    mutating func validateTagged(_ node: Node, _ tagged: Tagged, at path: String) -> JSON? {
        guard case .mapping(let mapping) = node else {
            return wrongType(node, path, expected: .tagged(tagged))
        }
        let known = tagged.variants.keys.sorted().joined(separator: ", ")
        let tagNode = mapping.first { $0.key.string == tagged.discriminator }?.value
        let tag: String
        if let tagNode {
            guard let value = interpolated(tagNode, at: join(path, tagged.discriminator)) else { return nil }
            tag = value
            guard tagged.variants[tag] != nil else {
                let hint = tagged.elsewhere[tag].map { "; \($0)" } ?? ""
                report(
                    tagged.unknownCode,
                    tagNode,
                    join(path, tagged.discriminator),
                    "unknown \(tagged.noun) '\(tag)'\(hint)",
                    expected: "one of: \(known)"
                )
                return nil
            }
        } else if let defaultVariant = tagged.defaultVariant {
            tag = defaultVariant
        } else {
            report(.missingKey, node, path, "missing required key '\(tagged.discriminator)'", expected: "\(tagged.noun): one of \(known)")
            return nil
        }
        let schema = tagged.common + tagged.variants[tag]!
        guard case .object(var members) = validateObject(node, schema: schema, extraKeys: [tagged.discriminator], at: path) else {
            return nil
        }
        members[tagged.discriminator] = .string(tag)
        return .object(members)
    }

    mutating func validateObject(_ node: Node, schema: Schema, extraKeys: [String], at path: String) -> JSON? {
        guard case .mapping(let mapping) = node else {
            return wrongType(node, path, expected: .object(schema))
        }
        var members: [String: JSON] = [:]
        var seen: Set<String> = []
        var valid = true
        for (keyNode, valueNode) in mapping {
            let key = keyNode.string ?? ""
            if !seen.insert(key).inserted {
                report(.duplicateKey, keyNode, join(path, key), "key '\(key)' appears twice")
                valid = false
                continue
            }
            if extraKeys.contains(key) { continue }
            guard let schemaKey = schema.key(named: key) else {
                let allowed = (extraKeys + schema.keyNames).joined(separator: ", ")
                report(.unknownKey, keyNode, join(path, key), "unknown key '\(key)'", expected: "one of: \(allowed)")
                valid = false
                continue
            }
            if let value = validate(valueNode, as: schemaKey.type, at: join(path, key)) {
                if let number = value.doubleValue, !schemaKey.admits(number) {
                    report(.invalidValue, valueNode, join(path, key), schemaKey.refusal(of: value), expected: schemaKey.rangeText)
                    valid = false
                }
                members[key] = value
            } else {
                valid = false
            }
        }
        for schemaKey in schema.keys where members[schemaKey.name] == nil && !seen.contains(schemaKey.name) {
            if schemaKey.required {
                report(.missingKey, node, path.isEmpty ? "" : path, "missing required key '\(schemaKey.name)'", expected: schemaKey.type.name)
                valid = false
            } else if let defaultValue = schemaKey.defaultValue {
                members[schemaKey.name] = defaultValue
            }
        }
        return valid ? .object(members) : nil
    }

    mutating func validateScalar(_ node: Node, as type: ValueType, at path: String) -> JSON? {
        guard case .scalar(let scalar) = node else { return wrongType(node, path, expected: type) }
        guard let text = interpolated(node, at: path) else { return nil }
        let plain = scalar.style == .plain || scalar.string != text
        switch type {
        case .string:
            if plain, scalar.string == text, Self.isNull(text) { return wrongType(node, path, expected: type, found: "null") }
            return .string(text)
        case .integer:
            if let value = Int64(text.trimmingCharacters(in: .whitespaces)) { return .int(value) }
        case .number:
            if let value = Double(text.trimmingCharacters(in: .whitespaces)) { return .double(value) }
        case .boolean:
            switch text.lowercased() {
            case "true": return .bool(true)
            case "false": return .bool(false)
            default: break
            }
        case .duration:
            if let seconds = Self.parseDuration(text) { return .double(seconds) }
        case .oneOf(let values):
            if values.contains(text) { return .string(text) }
            report(.invalidValue, node, path, "'\(text)' is not allowed", expected: "one of: " + values.joined(separator: ", "))
            return nil
        default:
            break
        }
        return wrongType(node, path, expected: type, found: "'\(text)'")
    }

    /// A YAML value of any shape, as JSON with YAML's plain-scalar typing.
    mutating func plainValue(_ node: Node, at path: String) -> JSON? {
        switch node {
        case .scalar(let scalar):
            guard let text = interpolated(node, at: path) else { return nil }
            if scalar.style != .plain && scalar.string == text { return .string(text) }
            return Self.resolvePlain(text)
        case .sequence(let sequence):
            var elements: [JSON] = []
            for (index, item) in sequence.enumerated() {
                guard let value = plainValue(item, at: "\(path)[\(index)]") else { return nil }
                elements.append(value)
            }
            return .array(elements)
        case .mapping(let mapping):
            var members: [String: JSON] = [:]
            for (keyNode, valueNode) in mapping {
                let key = keyNode.string ?? ""
                if members[key] != nil {
                    report(.duplicateKey, keyNode, join(path, key), "key '\(key)' appears twice")
                    return nil
                }
                guard let value = plainValue(valueNode, at: join(path, key)) else { return nil }
                members[key] = value
            }
            return .object(members)
        case .alias:
            report(.invalidValue, node, path, "YAML aliases are not supported")
            return nil
        }
    }

    mutating func interpolated(_ node: Node, at path: String) -> String? {
        guard case .scalar(let scalar) = node else {
            _ = wrongType(node, path, expected: .string)
            return nil
        }
        switch interpolation.interpolate(scalar.string) {
        case .success(let text):
            return text
        case .failure(.undefined(let variable, let message)):
            let detail = message.map { ": \($0)" } ?? ""
            report(
                .undefinedVariable,
                node,
                path,
                "environment variable '\(variable)' is not set\(detail)",
                expected: "a value in the environment, or a default: ${\(variable):-default}"
            )
            return nil
        case .failure(.malformed(let reason)):
            report(.malformedInterpolation, node, path, reason)
            return nil
        }
    }

    mutating func wrongType(_ node: Node, _ path: String, expected: ValueType, found: String? = nil) -> JSON? {
        let actual = found ?? Self.describe(node)
        report(.wrongType, node, path, "wrong type: found \(actual)", expected: expected.name)
        return nil
    }

    static func describe(_ node: Node) -> String {
        switch node {
        case .scalar(let scalar): Self.isNull(scalar.string) && scalar.style == .plain ? "null" : "'\(scalar.string)'"
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .alias: "an alias"
        }
    }

    static func isNull(_ text: String) -> Bool { text.isEmpty || text == "~" || text == "null" || text == "Null" || text == "NULL" }

    static func resolvePlain(_ text: String) -> JSON {
        if isNull(text) { return .null }
        switch text {
        case "true", "True", "TRUE": return .bool(true)
        case "false", "False", "FALSE": return .bool(false)
        default: break
        }
        if let value = Int64(text) { return .int(value) }
        if text.contains(where: { $0.isNumber }), !text.hasPrefix("+"), let value = Double(text), text.lowercased() != "nan",
            !text.lowercased().contains("inf")
        {
            return .double(value)
        }
        return .string(text)
    }

    /// The longest duration accepted: a year. Longer values are mistakes and would overflow
    /// the integer nanoseconds and milliseconds timers work in.
    public static let maximumDuration: Double = 366 * 86400

    /// `250ms`, `30s`, `5m`, `2h`, `90d`, or plain seconds; nil when malformed, negative or over a year.
    public static func parseDuration(_ text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        var seconds: Double?
        for (suffix, factor) in units where trimmed.hasSuffix(suffix) {
            if let value = Double(trimmed.dropLast(suffix.count)) { seconds = value * factor }
            break
        }
        if seconds == nil, let value = Double(trimmed) { seconds = value }
        guard let seconds, seconds.isFinite, seconds >= 0, seconds <= maximumDuration else { return nil }
        return seconds
    }

    func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
}
