import Foundation
import Logging
import PushPipeCore
import Synchronization

/// The accepted events this pipeline holds, whose leases it keeps.
///
/// Only the events this process is really working on are renewed: one it let go of (cancelled
/// at a drain timeout, claimed but not submitted, a submit refused) lapses within a lease and
/// is claimed again, by this process or another, so no accepted event waits for a restart.
/// Renewal runs on its own, as a long-running stage: submissions waiting for room in the
/// pipeline, a graceful stop's drain or a slow claim never hold it up.
final class HTTPEventLeases: Sendable {
    private struct State {
        /// Event ids in flight here, with how many times (a backend may reuse an id).
        var held: [String: Int] = [:]
        /// Events processed whose removal from the queue failed: still held, retried each round.
        var finished: Set<String> = []
        /// The last time a store operation failed: claims wait a lease after it, so that after an
        /// outage every daemon renews what it holds before any daemon takes over lapsed leases.
        var lastFailure: ContinuousClock.Instant?
        /// A failure this source logged itself (not one the store reported, such as an outage):
        /// its end is logged too.
        var failureLogged = false
    }

    private let state = Mutex(State())

    func hold(_ id: String) { state.withLock { $0.held[id, default: 0] += 1 } }

    /// The event is no longer this process's concern (removed from the queue, or let go of).
    func forget(_ id: String) {
        state.withLock { state in
            state.finished.remove(id)
            guard let count = state.held[id] else { return }
            state.held[id] = count > 1 ? count - 1 : nil
        }
    }

    func finishLater(_ id: String) { state.withLock { _ = $0.finished.insert(id) } }

    /// Lets go of events this process will not finish (cancelled, or not submitted while the
    /// pipeline stops): their leases end now, so the next claim anywhere takes them. In a task
    /// of its own: a cancelled task cannot reach a pooled connection.
    func letGo(_ ids: [String], store: any QueuedEventStore, pipeline: String, source: String) async {
        ids.forEach(forget)
        _ = try? await uncancelled { try await store.releaseLeases(pipeline: pipeline, source: source, eventIDs: ids) }
    }

    var heldIDs: [String] { state.withLock { Array($0.held.keys) } }
    var finishedIDs: [String] { state.withLock { Array($0.finished) } }

    /// Notes a failed store operation; returns whether to log it: the first failure since the
    /// store last answered, unless the store reports it itself (it logs an outage once).
    func failed(_ error: any Error, now: ContinuousClock.Instant = .now) -> Bool {
        let reportedByStore = StoreAvailability.meansAway(error)
        return state.withLock { state in
            state.lastFailure = now
            guard !state.failureLogged, !reportedByStore else { return false }
            state.failureLogged = true
            return true
        }
    }

    /// Notes that the store answered; returns whether a logged failure ended.
    func answered() -> Bool {
        state.withLock { state in
            defer { state.failureLogged = false }
            return state.failureLogged
        }
    }

    /// Whether claims may run: no store operation failed within the last `lease`.
    func mayClaim(lease: Duration, now: ContinuousClock.Instant = .now) -> Bool {
        state.withLock { state in state.lastFailure.map { now - $0 >= lease } ?? true }
    }
}

extension HTTPEventSource {
    /// Until the pipeline drained: every third of the lease, renews the leases of the events
    /// held here and retries the removals that failed.
    func run(context: StageContext) async throws {
        guard context.mode == .live else { return await untilCancelled() }
        let lease = configuration.lease
        while !Task.isCancelled {
            do {
                try await context.queuedEvents.renewLeases(pipeline: context.pipeline, source: context.key, eventIDs: leases.heldIDs, lease: lease)
                for id in leases.finishedIDs {
                    try await context.queuedEvents.dequeue(pipeline: context.pipeline, eventID: id)
                    leases.forget(id)
                }
                if leases.answered() { context.logger.notice("queued events: leases renewed again") }
            } catch is CancellationError {
                return
            } catch {
                if leases.failed(error) {
                    context.logger.error("queued events: leases not renewed, the store failed (logged again when it answers): \(error)")
                }
            }
            do { try await Task.sleep(for: .milliseconds(Int64(lease * 1000 / 3))) } catch { return }
        }
    }

    /// Removes the event from the queue once processed, whatever the outcome (it is recorded).
    /// Cancelled (a drain timeout): let go of, so it is claimed again at once. A removal that
    /// fails keeps the event held, renewed and retried, rather than sent again by another daemon.
    static func completion(of eventID: String, leases: HTTPEventLeases, store: any QueuedEventStore, pipeline: String, source: String,
                           logger: Logger) -> @Sendable (EventReport) async -> Void {
        { _ in
            guard !Task.isCancelled else { return await leases.letGo([eventID], store: store, pipeline: pipeline, source: source) }
            do {
                try await store.dequeue(pipeline: pipeline, eventID: eventID)
                leases.forget(eventID)
                logger.debug("event \(eventID) processed; removed from the queue")
            } catch {
                leases.finishLater(eventID)
                // An unavailable store logged that itself, once.
                let level: Logger.Level = StoreAvailability.meansAway(error) ? .debug : .warning
                logger.log(level: level, "event \(eventID) processed but not yet removed from the queue (retried with the lease renewals): \(error)")
            }
        }
    }
}
