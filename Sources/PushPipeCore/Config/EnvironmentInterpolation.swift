/// `${VAR}`, `${VAR:-default}`, `${VAR:?message}` and `$$` inside YAML scalar values.
///
/// Interpolation happens on the parsed YAML tree, scalar by scalar, so a value coming from
/// the environment can never inject YAML structure, and every error points at the scalar
/// that used the variable.
public struct EnvironmentInterpolation: Sendable {
    public var environment: [String: String]
    /// Under `--dry-run` credentials may be absent: undefined variables become empty strings.
    public var allowsUndefined: Bool

    public init(environment: [String: String], allowsUndefined: Bool = false) {
        self.environment = environment
        self.allowsUndefined = allowsUndefined
    }

    public enum Failure: Error, Equatable, Sendable {
        case undefined(variable: String, message: String?)
        case malformed(String)
    }

    /// The names of variables used in `text` (for documentation and tests).
    public func interpolate(_ text: String) -> Result<String, Failure> {
        guard text.contains("$") else { return .success(text) }
        var output = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            guard character == "$" else {
                output.append(character)
                index = text.index(after: index)
                continue
            }
            let next = text.index(after: index)
            if next < text.endIndex, text[next] == "$" {
                output.append("$")
                index = text.index(after: next)
                continue
            }
            guard next < text.endIndex, text[next] == "{" else {
                output.append("$")
                index = next
                continue
            }
            guard let close = text[next...].firstIndex(of: "}") else {
                return .failure(.malformed("unterminated '${' in \"\(text)\""))
            }
            let expression = String(text[text.index(after: next)..<close])
            switch resolve(expression) {
            case .success(let value): output += value
            case .failure(let failure): return .failure(failure)
            }
            index = text.index(after: close)
        }
        return .success(output)
    }

    private func resolve(_ expression: String) -> Result<String, Failure> {
        let name: Substring
        var defaultValue: String?
        var requiredMessage: String?
        if let range = expression.range(of: ":-") {
            name = expression[..<range.lowerBound]
            defaultValue = String(expression[range.upperBound...])
        } else if let range = expression.range(of: ":?") {
            name = expression[..<range.lowerBound]
            requiredMessage = String(expression[range.upperBound...])
        } else {
            name = Substring(expression)
        }
        guard Self.isValidName(name) else {
            return .failure(.malformed("'${\(expression)}' is not a variable reference (names are letters, digits and _)"))
        }
        if let value = environment[String(name)], !(value.isEmpty && defaultValue != nil) {
            return .success(value)
        }
        if let defaultValue { return .success(defaultValue) }
        if allowsUndefined { return .success("") }
        return .failure(.undefined(variable: String(name), message: requiredMessage))
    }

    static func isValidName(_ name: Substring) -> Bool {
        guard let first = name.first, first == "_" || first.isLetter else { return false }
        return name.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
    }
}
