import Logging

/// Moves a source's queued events from the key of earlier versions (its position,
/// `sources[0]`) to its key, only those nobody works on (`QueuedEventStore.renameSource`): a
/// daemon of an earlier version that still runs on the store keeps sending what it holds.
struct PositionKeyMove: Sendable {
    /// The pipeline's part of the store.
    let store: any PipelineStore
    let from: String
    let to: String
    /// The source's lease: what an earlier version's daemon holds lapses within it.
    let lease: Duration
    /// Whether passes go on while the pipeline runs: only a source that queues events gets
    /// more of them from a daemon of an earlier version.
    let repeats: Bool
    let logger: Logger

    /// The lease of a source that queues no events: `http.event`'s default, for what an earlier
    /// configuration left under its position.
    static let leaseOfOtherSources: Duration = .seconds(15)

    var pipeline: String { store.name }

    /// One per source of `definition` whose key is not its position.
    static func moves(for definition: PipelineDefinition, store: any Store, logger: Logger) -> [PositionKeyMove] {
        definition.sources.filter { $0.key != $0.id }.map { source in
            let intake = (source.stage as? any QueuedEventSource)?.intake
            return PositionKeyMove(
                store: store.pipeline(definition.name),
                from: source.id,
                to: source.key,
                lease: intake?.lease ?? leaseOfOtherSources,
                repeats: intake != nil,
                logger: logger
            )
        }
    }

    /// One pass; returns how many events moved. A failure is logged and left to the next pass.
    @discardableResult
    func moveOnce() async -> Int {
        do {
            let moved = try await store.renameSource(from: from, to: to, lease: lease)
            if moved > 0 { logger.notice("queued events: \(moved) of pipeline \(pipeline) moved from \(from) to its key '\(to)'") }
            return moved
        } catch is CancellationError {
            return 0
        } catch {
            // An unavailable store logged that itself, once.
            let level: Logger.Level = StoreAvailability.meansAway(error) ? .debug : .warning
            logger.log(level: level, "queued events: could not move events of pipeline \(pipeline) queued under \(from) to its key '\(to)': \(error)")
            return 0
        }
    }

    /// A pass every lease until cancelled, for the pipeline's whole life rather than until a
    /// pass finds nothing: a daemon of an earlier version may accept an event under the
    /// position at any time, and no pass can tell one that is idle from none (a pass costs one
    /// update of the queue).
    func repeatWhileRunning() async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: lease) } catch { return }
            await moveOnce()
        }
    }
}
