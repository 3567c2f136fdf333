import Logging

/// What a stage may use besides its configuration.
public struct StageContext: Sendable {
    public var pipeline: String
    /// Stable name of the stage inside its pipeline (`filters[0]`, `renderer`), used to key its state.
    public var stage: String
    public var store: any Store
    public var logger: Logger
    public var mode: RunMode

    public init(pipeline: String, stage: String, store: any Store, logger: Logger, mode: RunMode) {
        self.pipeline = pipeline
        self.stage = stage
        self.store = store
        self.logger = logger
        self.mode = mode
    }

    public func forStage(_ stage: String) -> StageContext {
        var copy = self
        copy.stage = stage
        copy.logger[metadataKey: "stage"] = .string(stage)
        return copy
    }

    /// The tokens of one kind an event should go to: its user's, or every user's when the
    /// event names no user.
    public func tokens(for event: Event, kind: String) async throws -> [DeviceToken] {
        try await store.tokens(pipeline: pipeline, user: event.user, kind: kind)
    }
}

public enum RunMode: Sendable, Equatable {
    /// Sends for real.
    case live
    /// Prints instead of sending; records nothing as delivered.
    case dryRun
}
