import Foundation
import Logging

/// Applies a pipeline's retention in the background: at start, then every `interval`, in
/// batches of a few hundred rows, each its own short transaction, so deliveries never wait
/// long behind it.
struct RetentionPruner: Sendable {
    let policy: RetentionPolicy
    /// The pipeline's part of the store.
    let store: any PipelineStore
    let logger: Logger
    let clock: any DaemonClock
    var telemetry: Telemetry = .unobserved

    static var rowsPerBatch: Int { 500 }
    static var usersPerBatch: Int { 50 }

    func run() async {
        while !Task.isCancelled {
            await pruneOnce()
            do { try await clock.sleep(for: policy.interval) } catch { return }
        }
    }

    /// One pass over the pipeline's rows; returns how many were pruned.
    @discardableResult
    func pruneOnce() async -> Int {
        var pruned = 0
        let now = clock.now
        do {
            let cutoff = now - policy.maxAge.inSeconds
            pruned += try await Self.inBatches { try await store.pruneDeliveries(createdBefore: cutoff, limit: $0) }
            if policy.perUser > 0 {
                var after: String?
                repeat {
                    let (deleted, last) = try await store.pruneDeliveries(
                        keepingPerUser: policy.perUser,
                        usersAfter: after,
                        users: Self.usersPerBatch
                    )
                    pruned += deleted
                    after = last
                    await Task.yield()
                } while after != nil && !Task.isCancelled
            }
            // An event's status lives as long as its deliveries; dead letters until replayed or dropped.
            let records = try await Self.inBatches { try await store.pruneEventRecords(unchangedSince: cutoff, limit: $0) }
            if records > 0 { logger.info("retention: removed \(records) event records") }
            // A broadcast's cursor not saved since the cutoff, as its record: a dead letter's replay
            // starts where the letter says, and a broadcast resumed later where its record says.
            let cursors = try await Self.inBatches { try await store.work.prune(WorkItem.broadcastKind, createdBefore: cutoff, limit: $0) }
            if cursors > 0 { logger.info("retention: removed \(cursors) broadcast cursors") }
            let webhookCutoff = now - WebhookDispatcher.longestWait.inSeconds
            let expired = try await Self.inBatches { try await store.work.prune(WebhookOutcome.kind, createdBefore: webhookCutoff, limit: $0) }
            if expired > 0 {
                logger.error("retention: \(expired) webhook outcomes removed unsent: their receiver did not take them within 3 days")
                telemetry.increment(.webhookOutcomes, [("pipeline", store.name), ("result", "expired")], by: expired)
            }
            let holds = try await store.work.forgetLapsedTakes(kindsStartingWith: WorkItem.holdKinds)
            if holds > 0 { logger.info("retention: removed \(holds) lapsed holds of daemons that stopped holding them") }
            let keys = try await Self.inBatches { try await store.pruneExpiredIdempotencyKeys(limit: $0) }
            if keys > 0 { logger.info("retention: removed \(keys) idempotency keys past their time to live") }
        } catch {
            // An unavailable store logged that itself, once; the next pass tries again.
            logger.log(level: StoreAvailability.meansAway(error) ? .debug : .error, "retention: pruning stopped: \(error)")
        }
        if pruned > 0 { logger.info("retention: pruned \(pruned) delivery rows") }
        return pruned
    }

    /// Runs `prune` (given the batch size) until a batch comes back short; returns the total.
    static func inBatches(_ prune: (Int) async throws -> Int) async throws -> Int {
        var total = 0
        while !Task.isCancelled {
            let deleted = try await prune(rowsPerBatch)
            total += deleted
            if deleted < rowsPerBatch { break }
            await Task.yield()
        }
        return total
    }
}
