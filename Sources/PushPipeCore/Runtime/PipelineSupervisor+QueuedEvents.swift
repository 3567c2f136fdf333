import Logging

extension PipelineSupervisor {
    /// An accepted event waits under its pipeline's name and its source's key, and only a
    /// running source of that name and key claims it. Before pipelines start, events queued
    /// under a key of earlier versions (the source's position, `sources[0]`) move to the
    /// source's key.
    func moveEventsQueuedByPosition(_ definitions: [PipelineDefinition]) async {
        do {
            for definition in definitions {
                for source in definition.sources where source.key != source.id {
                    let moved = try await store.renameSource(pipeline: definition.name, from: source.id, to: source.key)
                    if moved > 0 {
                        logger.notice("queued events: \(moved) of pipeline \(definition.name) moved from \(source.id) to its key '\(source.key)'")
                    }
                }
            }
        } catch {
            logger.warning("queued events: could not move events queued under a source's position: \(error)")
        }
    }

    /// After a rename no running source would claim what waits under the old name, silently:
    /// those are reported, with how to have them sent.
    func reportUnclaimedQueuedEvents(_ definitions: [PipelineDefinition]) async {
        do {
            let claimed = Set(definitions.flatMap { definition in
                (definition.sources.map(\.key) + [QueuedEventIntake.replayKey]).map { "\(definition.name)/\($0)" }
            })
            for waiting in try await store.queuedEventCounts() where !claimed.contains("\(waiting.pipeline)/\(waiting.source)") {
                logger.warning("""
                    queued events: \(waiting.count) accepted events of pipeline '\(waiting.pipeline)' wait for a source keyed '\(waiting.source)', \
                    which no pipeline has (renamed or removed?): they are sent once pipeline '\(waiting.pipeline)' has a source with `key: \(waiting.source)`
                    """)
            }
        } catch {
            logger.warning("queued events: could not look for events that no source claims: \(error)")
        }
    }
}
