import DequeModule
import Foundation
import Synchronization

/// What the status page shows of each pipeline besides its metrics: running totals, the last
/// errors and the latest deliveries (tokens masked), kept in small rings in memory.
public final class RecentActivity: Sendable {
    public struct Totals: Sendable, Equatable {
        public var received = 0
        public var dropped = 0
        public var failed = 0
        public var rendered = 0
        public var delivered = 0
        public var notDelivered = 0
        public var retries = 0
        public var tokensPruned = 0
    }

    public struct Delivery: Sendable {
        public var time: Date
        public var user: String
        public var token: String
        public var outcome: String
        public var reason: String?
    }

    public struct Problem: Sendable {
        public var time: Date
        public var stage: String
        public var message: String
    }

    public struct Pipeline: Sendable {
        public var totals = Totals()
        public var deliveries: Deque<Delivery> = []
        public var problems: Deque<Problem> = []
    }

    static let kept = 20
    private let pipelines = Mutex<[String: Pipeline]>([:])

    /// Changes a pipeline's entry where it is stored: a copy taken out and written back would
    /// copy its rings at every delivery.
    private func modify(_ pipeline: String, _ change: (inout Pipeline) -> Void) {
        pipelines.withLock { change(&$0[pipeline, default: Pipeline()]) }
    }

    public func update(_ pipeline: String, _ change: (inout Totals) -> Void) {
        modify(pipeline) { change(&$0.totals) }
    }

    public func delivery(_ pipeline: String, _ delivery: Delivery) {
        modify(pipeline) { entry in
            if delivery.outcome == "delivered" || delivery.outcome == "dry_run" { entry.totals.delivered += 1 } else { entry.totals.notDelivered += 1 }
            entry.deliveries.append(delivery)
            if entry.deliveries.count > Self.kept { entry.deliveries.removeFirst() }
        }
    }

    public func problem(_ pipeline: String, stage: String, _ message: String) {
        modify(pipeline) { entry in
            entry.problems.append(Problem(time: Date(), stage: stage, message: message))
            if entry.problems.count > Self.kept { entry.problems.removeFirst() }
        }
    }

    public func snapshot(_ pipeline: String) -> Pipeline {
        pipelines.withLock { $0[pipeline] ?? Pipeline() }
    }
}
