import Logging

extension PipelineSupervisor {
    /// An accepted event waits under its pipeline's name and its source's key, and only a
    /// running source of that name and key claims it. Before pipelines start, events queued
    /// under a key of earlier versions (the source's position, `sources[0]`) that nobody works
    /// on move to the source's key (`PositionKeyMove`).
    func moveEventsQueuedByPosition(_ definitions: [PipelineDefinition]) async {
        for definition in definitions {
            for move in PositionKeyMove.moves(for: definition, store: store, logger: logger) { await move.moveOnce() }
        }
    }

    /// Runs the pipeline, and meanwhile moves what daemons of earlier versions still running
    /// let go of or accept under its sources' positions, every lease.
    func runPipeline(_ runner: PipelineRunner) async {
        let moves = PositionKeyMove.moves(for: runner.definition, store: store, logger: logger).filter(\.repeats)
        await withDiscardingTaskGroup { group in
            for move in moves { group.addTask { await move.repeatWhileRunning() } }
            await runner.run()
            group.cancelAll()
        }
    }

    /// After a rename no running source would claim what waits under the old name, silently:
    /// those are reported, with how to have them sent.
    func reportUnclaimedQueuedEvents(_ definitions: [PipelineDefinition]) async {
        do {
            let claimed = Set(
                definitions.flatMap { definition in
                    (definition.sources.map(\.key) + [QueuedEventIntake.replayKey, QueuedEventIntake.heldKey]).map { "\(definition.name)/\($0)" }
                }
            )
            for waiting in try await store.queuedEventCounts() where !claimed.contains("\(waiting.pipeline)/\(waiting.source)") {
                logger.warning(
                    """
                    queued events: \(waiting.count) accepted events of pipeline '\(waiting.pipeline)' wait for a source keyed '\(waiting.source)', \
                    which no pipeline has (renamed or removed?): they are sent once pipeline '\(waiting.pipeline)' has a source with \
                    `key: \(waiting.source)`
                    """
                )
            }
        } catch {
            logger.warning("queued events: could not look for events that no source claims: \(error)")
        }
    }
}
