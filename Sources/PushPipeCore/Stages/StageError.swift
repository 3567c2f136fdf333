/// A stage failed to handle one event. The event fails; the pipeline keeps running.
public struct StageError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case invalidEvent = "invalid-event"
        case templateFailed = "template-failed"
        case payloadTooLarge = "payload-too-large"
        case pluginFailed = "plugin-failed"
        case pluginTimeout = "plugin-timeout"
        case missingToken = "missing-token"
        case unavailable = "unavailable"
    }

    public var code: Code
    public var stage: String
    public var message: String

    public init(_ code: Code, stage: String, _ message: String) {
        self.code = code
        self.stage = stage
        self.message = message
    }

    public var description: String { "\(stage): \(message) [\(code.rawValue)]" }
}
