/// An event refused because its pipeline stops (a reload replaced it, or the daemon drains).
/// Nothing of it was kept, so its sender may send it again: the app host answers 503 with
/// `Retry-After`, a source ends its loop.
public struct PipelineStopping: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The pipeline takes no new event.
        case refused = "pipeline_stopping"
        /// The pipeline stopped while the caller waited for the event's report.
        case stoppedBeforeReport = "pipeline_stopped_before_report"
    }

    public var code: Code
    public var pipeline: String

    public init(_ code: Code, pipeline: String) {
        self.code = code
        self.pipeline = pipeline
    }

    public var description: String {
        switch code {
        case .refused: "pipeline \(pipeline) is stopping"
        case .stoppedBeforeReport: "pipeline \(pipeline) stopped before the event completed"
        }
    }
}
