import Logging

extension PipelineDefinition {
    /// Runs `body` while the pipeline's long-running stages (plugin processes, connection
    /// pools) run, as they do in the daemon, and stops them afterwards. One-shot commands
    /// (`dry-run`, `simulate`, `test`) use it instead of a daemon.
    public func withRunningStages<T: Sendable>(
        store: any Store,
        logger: Logger,
        mode: RunMode,
        _ body: @Sendable () async throws -> T
    ) async throws -> T {
        let context = StageContext(pipeline: name, stage: "pipeline", store: store, logger: logger, mode: mode)
        let stages = longRunningStages
        return try await withThrowingTaskGroup(of: T?.self) { group in
            for (id, key, stage) in stages {
                group.addTask {
                    try? await stage.run(context: context.forStage(id, key: key))
                    return nil
                }
            }
            defer { group.cancelAll() }
            return try await body()
        }
    }
}
