import Foundation
import PushPipeCore
import PushPipePostgres
import PushPipeSQLite
import PushPipeTesting
import Synchronization

/// The chaos soak's account: what was accepted, every delivery with the daemon process that
/// sent it, and when each process was killed. A notification sent twice is explained when one
/// of its sends came from a process SIGKILLed soon after (it was in flight at the kill: sent,
/// its outcome not yet committed); any other is not.
final class ChaosLedger: SoakAccounting {
    struct Delivery: Sendable {
        var instance: Int
        var at: ContinuousClock.Instant
    }

    private struct State {
        var nextInstance = 0
        var accepted = Set<String>()
        var deliveries: [String: [Delivery]] = [:]
        var killedAt: [Int: ContinuousClock.Instant] = [:]
        /// When a process was sent SIGTERM: a broadcast's page cut at the drain timeout is sent again.
        var terminatedAt: [Int: ContinuousClock.Instant] = [:]
        /// When a process sent SIGTERM had exited: it drains (and sends) until then.
        var exitedAt: [Int: ContinuousClock.Instant] = [:]
        /// The database's outages, from their start until it was back.
        var outages: [ClosedRange<ContinuousClock.Instant>] = []
        /// When a stand-in sent GOAWAY and closed a process's connection: the streams still
        /// open on it were accepted but never answered, and are sent again (at least once).
        var cutAt: [Int: [ContinuousClock.Instant]] = [:]
        var faults: [String: Int] = [:]
        /// Faults and process starts in order, for the account of a duplicate nothing explains.
        var timeline: [(at: ContinuousClock.Instant, what: String)] = []
        /// Each finished daemon process's log, for the account of what was lost.
        var logs: [Int: [String]] = [:]
        /// When each Web Push event was accepted, and how long its well-behaved recipient waited.
        var acceptedAt: [String: ContinuousClock.Instant] = [:]
        var delays: [Double] = []
        /// How long each SIGTERM took to end its process.
        var stops: [Double] = []
        /// Requests of a burst into a stopping daemon that got no answer at all (not a 503, not a 202).
        var unansweredAtStop = 0
    }

    private let start = ContinuousClock.now
    /// The same moment on the wall clock, which the daemons' log lines are stamped with.
    private let startDate = Date()
    private let state = Mutex(State())
    /// How long before its kill a process's send counts as in flight at the kill: the stand-in's
    /// answer delay, the outcome's commit, and a margin for a loaded machine.
    let inFlightWindow: Duration

    /// Where each daemon's log is written once it ended (nil: kept in memory only).
    let logDirectory: String?

    init(inFlightWindow: Duration, logDirectory: String? = nil) {
        self.inFlightWindow = inFlightWindow
        self.logDirectory = logDirectory
    }

    private let numbers = SoakNumbers()
    func nextID(_ prefix: String) -> String { numbers.nextID(prefix) }
    func nextGame() -> Int64 { numbers.nextGame() }

    /// A number for the next daemon process.
    func nextInstance(slot: Int) -> Int {
        state.withLock { state in
            defer { state.nextInstance += 1 }
            state.timeline.append((.now, "#\(state.nextInstance) starts in slot \(slot)"))
            return state.nextInstance
        }
    }

    func accept(_ id: String) { state.withLock { _ = $0.accepted.insert(id) } }

    /// Scheduled sends, judged by the clock of the daemon that sent each.
    let timing = ChaosTimingAccount()

    func accept(_ id: String, scheduledAt instant: Double) {
        timing.scheduled(id, at: instant)
        accept(id)
    }

    func killed(_ instance: Int) { state.withLock { $0.killedAt[instance] = .now } }
    func terminated(_ instance: Int) { state.withLock { $0.terminatedAt[instance] = .now } }
    func exited(_ instance: Int) { state.withLock { $0.exitedAt[instance] = .now } }

    /// How long a broadcast's send stays in flight: its page is recorded once all of its 1,000
    /// recipients settled, which retries and a database outage stretch to tens of seconds.
    static let pageWindow: Duration = .seconds(90)
    func connectionCut(_ instance: Int) {
        state.withLock { state in
            state.cutAt[instance, default: []].append(.now)
            state.timeline.append((.now, "connection of #\(instance) cut"))
        }
    }
    func fault(_ name: String, instance: Int? = nil) {
        state.withLock { state in
            state.faults[name, default: 0] += 1
            state.timeline.append((.now, name + (instance.map { " #\($0)" } ?? "")))
        }
    }

    /// A moment in the timeline that is no fault of its own.
    func mark(_ what: String) { state.withLock { $0.timeline.append((.now, what)) } }

    /// The database is back after an outage that began at `began`.
    func databaseBack(since began: ContinuousClock.Instant) {
        state.withLock { state in
            state.outages.append(began...ContinuousClock.now)
            state.timeline.append((.now, "database back"))
        }
    }

    /// How long `outages` cover of `span`.
    static func overlap(of outages: [ClosedRange<ContinuousClock.Instant>], with span: ClosedRange<ContinuousClock.Instant>) -> Duration {
        outages.filter { $0.overlaps(span) }.reduce(.zero) { total, outage in
            total + (min(outage.upperBound, span.upperBound) - max(outage.lowerBound, span.lowerBound))
        }
    }

    private func offset(_ at: ContinuousClock.Instant) -> String {
        let seconds = Double((at - start).components.seconds) + Double((at - start).components.attoseconds) / 1e18
        return String(format: "+%.1fs", seconds)
    }

    /// Records the ids a request answered 200 carried (event id, reply message id, OGS games);
    /// a broadcast's id counts once per token (`b7#<token>`).
    /// - Parameter skew: how far ahead of the wall clock the sender's clock runs (seconds).
    func delivered(_ request: APNsStandIn.Request, by instance: Int, skew: Double = 0) {
        guard let body = request.body else { return }
        var ids: [String] = []
        if let id = body["id"]?.stringValue {
            ids.append(id.hasPrefix("b") ? "\(id)#\(request.token)" : id)
            let now = Date().timeIntervalSince1970
            if id.hasPrefix("s") { timing.sent(id, wall: now, clock: now + skew) }
        }
        // A digest: every event it carries.
        for item in body["items"]?.arrayValue ?? [] { if let id = item["id"]?.stringValue { ids.append(id) } }
        if let id = body["message_id"]?.stringValue { ids.append(id) }
        for game in body["game_ids"]?.arrayValue ?? [] { if let id = game.intValue { ids.append("g\(id)") } }
        let delivery = Delivery(instance: instance, at: .now)
        state.withLock { state in for id in ids { state.deliveries[id, default: []].append(delivery) } }
    }

    /// An id a well-behaved Web Push recipient got, with how long after its accept.
    func delivered(_ id: String, by instance: Int) {
        state.withLock { state in
            if state.deliveries[id] == nil, let accepted = state.acceptedAt[id] {
                let waited = ContinuousClock.now - accepted
                state.delays.append(Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18)
            }
            state.deliveries[id, default: []].append(Delivery(instance: instance, at: .now))
        }
    }

    /// An accepted event whose delay to its first delivery the table shows.
    func acceptTimed(_ id: String) {
        state.withLock { state in
            state.accepted.insert(id)
            if state.deliveries[id] == nil { state.acceptedAt[id] = .now } else { state.delays.append(0) }
        }
    }

    func accept(_ ids: [String]) { state.withLock { $0.accepted.formUnion(ids) } }
    func stopped(after seconds: Double) { state.withLock { $0.stops.append(seconds) } }
    func unansweredAtStop(_ count: Int) { state.withLock { $0.unansweredAtStop += count } }
    var requestsUnansweredAtStop: Int { state.withLock { $0.unansweredAtStop } }

    /// The largest and 99th-percentile delay of well-behaved recipients, and the longest SIGTERM stop.
    var extremes: (largestDelay: Double, p99Delay: Double, longestStop: Double) {
        state.withLock { state in
            let delays = state.delays.sorted()
            let p99 = delays.isEmpty ? 0 : delays[min(delays.count - 1, Int(Double(delays.count) * 0.99))]
            return (delays.last ?? 0, p99, state.stops.max() ?? 0)
        }
    }

    /// Keeps a daemon process's log once it ended.
    func keepLog(of instance: Int, _ lines: [String]) {
        state.withLock { $0.logs[instance] = lines }
        guard let logDirectory else { return }
        try? FileManager.default.createDirectory(atPath: logDirectory, withIntermediateDirectories: true)
        FileManager.default.createFile(
            atPath: "\(logDirectory)/instance-\(instance).log",
            contents: Data((lines.joined(separator: "\n") + "\n").utf8)
        )
    }

    /// What the daemons' logs say about each id never delivered.
    func lostAccounts(limit: Int = 10) -> [String] {
        state.withLock { state in
            state.accepted.filter { state.deliveries[$0] == nil }.sorted().prefix(limit).map { id in
                let id = String(id.prefix { $0 != "#" })
                let lines = state.logs.sorted { $0.key < $1.key }.flatMap { instance, lines in
                    lines.filter { $0.contains(id) }.map { "#\(instance) \($0)" }
                }
                return "\(id):\n  " + lines.suffix(30).joined(separator: "\n  ")
            }
        }
    }

    var lost: Int { state.withLock { state in state.accepted.filter { state.deliveries[$0] == nil }.count } }

    var progress: String {
        state.withLock { state in
            let waiting = state.accepted.filter { state.deliveries[$0] == nil }
            return
                "\(state.accepted.count) accepted, \(waiting.count) not delivered yet \(waiting.sorted().prefix(3).map { $0.prefix(20) }), faults \(state.faults)"
        }
    }

    struct Summary {
        var accepted = 0, delivered = 0, lost = 0, explained = 0, unexplained = 0
        var unexplainedIDs: [String] = []
        /// For each unexplained duplicate: its sends (process, time) and the faults around them.
        var unexplainedAccounts: [String] = []
        var faults: [String: Int] = [:]
    }

    func summary() -> Summary {
        state.withLock { state in
            var summary = Summary(faults: state.faults)
            // Events a process waited on past the transport's timeout: APNs may have taken the
            // notification and its answer come late, so the retry may send it twice.
            // When each process logged a timeout. The log says it once per 10 s, naming one event
            // (it holds back the others, of any event), so a line stands for the process's
            // timeouts of the 10 s after it, each of a send made up to the request timeout (and
            // a loaded machine's lag) before.
            var timeouts: [Int: [ContinuousClock.Instant]] = [:]
            let stamp = ISO8601DateFormatter()
            for (instance, lines) in state.logs {
                for line in lines where line.contains("no answer within the request timeout") {
                    guard let date = stamp.date(from: String(line.prefix(24))) else { continue }
                    timeouts[instance, default: []].append(start + .milliseconds(Int64(date.timeIntervalSince(startDate) * 1000)))
                }
            }
            summary.accepted = state.accepted.count
            summary.delivered = state.accepted.filter { state.deliveries[$0] != nil }.count
            summary.lost = summary.accepted - summary.delivered
            for (id, deliveries) in state.deliveries where deliveries.count > 1 {
                // Each send but the last must have been in flight at its process's SIGKILL, or open
                // on a connection a GOAWAY closed before its answer.
                // A broadcast's page is recorded once all its recipients settled; an adversarial
                // Web Push event once its hanging and throttled subscribers did: each send of
                // theirs stays in flight as long.
                let page = id.contains("#") || id.hasPrefix("w")
                let explained = deliveries.dropLast().allSatisfy { delivery in
                    /// From the send (or `slack` before it) to `window` after it.
                    func within(_ window: Duration, slack: Duration = .zero) -> (ContinuousClock.Instant) -> Bool {
                        { at in at >= delivery.at - slack && at - delivery.at <= window }
                    }
                    // A page's sends are in flight until the page is recorded, which waits out any
                    // outage of the database meanwhile; anything else's, until its answer.
                    let pageWindow = Self.pageWindow + Self.overlap(of: state.outages, with: delivery.at...(delivery.at + Self.pageWindow))
                    let inFlight = within(page ? pageWindow : self.inFlightWindow)
                    // A send the stand-in read just after its process's SIGKILL was written before it.
                    if state.killedAt[delivery.instance].map(within(page ? pageWindow : self.inFlightWindow, slack: .seconds(1))) ?? false {
                        return true
                    }
                    // The database went away right after the send: its outcome (and the watermark
                    // or lease that would have stopped another daemon) could not be recorded.
                    if state.outages.contains(where: { within(self.inFlightWindow)($0.lowerBound) }) { return true }
                    if let stopped = state.terminatedAt[delivery.instance] {
                        // A stopping process drains: it goes on sending after the SIGTERM until it exits.
                        let stop = stopped...max(stopped, state.exitedAt[delivery.instance] ?? stopped + .seconds(120))
                        let sentWhileStopping = inFlight(stopped) || stop.contains(delivery.at)
                        if page, sentWhileStopping { return true }
                        // The database away while it stops: what it had in flight could not be
                        // recorded within the stop's grace, and another daemon sends it again.
                        if sentWhileStopping, state.outages.contains(where: { $0.overlaps(stop) }) { return true }
                    }
                    if (state.cutAt[delivery.instance] ?? []).contains(where: within(self.inFlightWindow)) { return true }
                    // Log stamps are whole seconds: a second's slack on the early side. A page's
                    // retries (and their log line) begin once all its first attempts are made, up
                    // to the page's window after the send that timed out.
                    return (timeouts[delivery.instance] ?? []).contains { logged in
                        delivery.at >= logged - (page ? Self.pageWindow : .seconds(6)) && delivery.at <= logged + .seconds(11)
                    }
                }
                if explained {
                    summary.explained += 1
                    continue
                }
                summary.unexplained += 1
                summary.unexplainedIDs.append(id)
                let sends = deliveries.map { "#\($0.instance) \(offset($0.at))" }.joined(separator: ", ")
                let first = deliveries[0].at - .seconds(30)
                let last = deliveries[deliveries.count - 1].at + .seconds(5)
                let around = state.timeline.filter { $0.at >= first && $0.at <= last }.map { "\(offset($0.at)) \($0.what)" }
                let lines = state.logs.sorted { $0.key < $1.key }.flatMap { instance, lines in
                    lines.filter { $0.contains(id) }.map { "#\(instance) \($0)" }
                }
                summary.unexplainedAccounts.append(
                    "\(id): sent by \(sends); around: \(around.joined(separator: "; "))\n  "
                        + lines.suffix(20).joined(separator: "\n  ")
                )
            }
            summary.unexplainedIDs.sort()
            return summary
        }
    }
}
