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

    public struct Delivery: Sendable, CustomReflectable {
        public var time: Date
        public var user: String
        /// Masked when read: the page reads a few, and every delivery writes one (a Web Push
        /// subscription's mask parses its endpoint).
        private var unmaskedToken: String
        public var token: String { TokenMask.mask(unmaskedToken) }
        public var outcome: ReportedOutcome
        public var reason: String?

        public init(time: Date, user: String, unmaskedToken: String, outcome: ReportedOutcome, reason: String?) {
            self.time = time
            self.user = user
            self.unmaskedToken = unmaskedToken
            self.outcome = outcome
            self.reason = reason
        }

        /// What `print` and `dump` show: the token masked, as everywhere else.
        public var customMirror: Mirror {
            Mirror(self, children: ["time": time, "user": user, "token": token, "outcome": outcome, "reason": reason as Any])
        }
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
    private let pipelines = Mutex<[String: PipelineLog]>([:])

    /// One pipeline's activity. The runtime holds on to its pipeline's log: looked up by name,
    /// every event and every delivery hashed the name once more.
    public final class PipelineLog: Sendable {
        private let entry = Mutex(Pipeline())

        /// Changes the entry where it is stored: a copy taken out and written back would copy
        /// its rings at every delivery.
        public func update(_ change: (inout Totals) -> Void) {
            entry.withLock { change(&$0.totals) }
        }

        public func delivery(_ delivery: Delivery) {
            entry.withLock { entry in
                if delivery.outcome.isSuccess {
                    entry.totals.delivered += 1
                } else {
                    entry.totals.notDelivered += 1
                }
                entry.deliveries.append(delivery)
                if entry.deliveries.count > RecentActivity.kept { entry.deliveries.removeFirst() }
            }
        }

        public func problem(stage: String, _ message: String) {
            entry.withLock { entry in
                entry.problems.append(Problem(time: Date(), stage: stage, message: message))
                if entry.problems.count > RecentActivity.kept { entry.problems.removeFirst() }
            }
        }

        var snapshot: Pipeline { entry.withLock { $0 } }
    }

    public func log(for pipeline: String) -> PipelineLog {
        pipelines.withLock { logs in
            if let log = logs[pipeline] { return log }
            let log = PipelineLog()
            logs[pipeline] = log
            return log
        }
    }

    public func snapshot(_ pipeline: String) -> Pipeline {
        pipelines.withLock { $0[pipeline] }?.snapshot ?? Pipeline()
    }
}
