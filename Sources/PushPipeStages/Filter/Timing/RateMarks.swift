import Foundation
import PushPipeCore

/// What a throttle or a frequency cap counts: a mark per event it let through, a work item of
/// its `kind` in the counted key's group (`WorkQueue.admit`), kept until it is older than the
/// longest period any rule looks back.
struct RateMarks: Sendable {
    let kind: String
    /// The store's pipeline the marks are kept under: the pipeline's own, or one every pipeline
    /// shares (a cap across pipelines).
    let pipeline: String?
    let rules: [(limit: Int, period: Duration)]

    var longest: Duration { rules.map(\.period).max() ?? .zero }

    func work(_ context: StageContext) -> any WorkQueue { context.store.pipeline(pipeline ?? context.pipeline).work }

    /// Whether `event` may go for `group` (and, live, counts it): an event admitted before
    /// (back from a wait, or sent again after a kill) is not counted twice.
    func admit(_ event: Event, group: String, context: StageContext) async throws -> Bool {
        let now = context.clock.now
        let limits = rules.map { WorkLimit(count: $0.limit, since: now - $0.period.inSeconds) }
        return try await work(context).admit(mark(event, group: group, at: now, context), limits: limits, adding: context.mode == .live)
    }

    /// Counts `event` whatever the limits say (a digest's look-back counts every event it saw).
    func note(_ event: Event, group: String, context: StageContext) async throws {
        guard context.mode == .live else { return }
        try await work(context).add([mark(event, group: group, at: context.clock.now, context)])
    }

    /// A broadcast's copies for each zone count as the one event they are parts of.
    private func mark(_ event: Event, group: String, at now: Double, _ context: StageContext) -> WorkItem {
        WorkItem(kind: kind, key: "\(context.pipeline)\n\(event.audience?.origin ?? event.id)", payload: [:], createdAt: now, group: group)
    }

    /// Until cancelled: removes marks no rule looks back to any more, every minute.
    func pruneWhileRunning(context: StageContext) async {
        guard context.mode == .live else { return await untilCancelled() }
        while !Task.isCancelled {
            do {
                let cutoff = context.clock.now - longest.inSeconds
                while try await work(context).prune(kind, createdBefore: cutoff, limit: 1000) == 1000 {}
            } catch is CancellationError {
                return
            } catch {
                context.logger.debug("\(kind): old marks not pruned yet: \(error)")
            }
            do { try await context.clock.sleep(for: .seconds(60)) } catch { return }
        }
    }
}

/// One rule of a throttle or a cap, as a pipeline writes it: `{limit: 3, period: 1d}`.
struct RateRule: Decodable, Sendable {
    var limit: Int
    @Seconds var period: Duration

    static let schema = Schema([
        .required("limit", .integer, in: 1...1_000_000, "At most this many."),
        .required("period", .duration, "In any window of this long (a rolling window)."),
    ])
}
