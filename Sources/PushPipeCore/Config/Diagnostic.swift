/// One problem found in a pipeline or plugin file, with where it is and what was expected.
///
/// Every validation step collects these instead of throwing at the first problem, so a
/// user fixing a file sees all of its mistakes in one run.
public struct Diagnostic: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Severity: String, Sendable, Hashable { case error, warning }

    public enum Code: String, Sendable, Hashable {
        case yamlSyntax = "yaml-syntax"
        case duplicateKey = "duplicate-key"
        case unknownKey = "unknown-key"
        case missingKey = "missing-key"
        case wrongType = "wrong-type"
        case invalidValue = "invalid-value"
        case unknownStageType = "unknown-stage-type"
        case undefinedVariable = "undefined-variable"
        case malformedInterpolation = "malformed-interpolation"
        case duplicateRoute = "duplicate-route"
        case duplicatePipeline = "duplicate-pipeline"
        case conflictingSharedState = "conflicting-shared-state"
        case unreadableFile = "unreadable-file"
        case invalidTemplate = "invalid-template"
        case invalidPlugin = "invalid-plugin"
    }

    public var severity: Severity
    public var code: Code
    public var location: SourceLocation
    /// The key path inside the document, e.g. `routes[1].auth.secret`.
    public var keyPath: String
    public var message: String
    /// What would have been accepted (allowed keys, known types, the expected type).
    public var expected: String?

    public init(
        _ severity: Severity = .error,
        _ code: Code,
        at location: SourceLocation,
        keyPath: String,
        _ message: String,
        expected: String? = nil
    ) {
        self.severity = severity
        self.code = code
        self.location = location
        self.keyPath = keyPath
        self.message = message
        self.expected = expected
    }

    public init(_ code: Code, at location: SourceLocation, keyPath: String, _ message: String, expected: String? = nil) {
        self.init(.error, code, at: location, keyPath: keyPath, message, expected: expected)
    }

    public var description: String {
        var text = "\(location): \(severity.rawValue): "
        if !keyPath.isEmpty { text += "\(keyPath): " }
        text += message
        if let expected { text += "; expected \(expected)" }
        return text + " [\(code.rawValue)]"
    }
}

/// `file:line:column`, 1-based as editors count.
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String { "\(file):\(line):\(column)" }
}

/// Thrown when a file (or a set of files) has errors; carries all of them.
public struct ConfigurationError: Error, CustomStringConvertible {
    public var diagnostics: [Diagnostic]
    public init(_ diagnostics: [Diagnostic]) { self.diagnostics = diagnostics }
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}

extension Array where Element == Diagnostic {
    public var hasErrors: Bool { contains { $0.severity == .error } }
    public var errors: [Diagnostic] { filter { $0.severity == .error } }
}
