import Foundation
import Synchronization

/// The chaos soak's scheduled sends (`soak-scheduled`: a `send_at` instant, then a window open in
/// even minutes, UTC): each one's instant, and when each send left by the clock of the daemon
/// that sent it. The third daemon runs a minute ahead and decides by its own clock, so its sends
/// are judged by it. A send is early when that clock was before the instant (a broken
/// guarantee), outside its window when it left in an odd minute (passed while open, then held
/// up by retries or a fault: the excursion past the close is measured), and late by the time
/// from the first opening at or after the instant to its first send, on the wall clock.
final class ChaosTimingAccount: Sendable {
    private let state = Mutex((instants: [String: Double](), sends: [String: [(wall: Double, clock: Double)]]()))

    /// The window: the first 60 s of every 120 (even minutes).
    static func isOpen(_ time: Double) -> Bool { time - (time / 120).rounded(.down) * 120 < 60 }

    /// The first open moment at or after `time`.
    static func opening(atOrAfter time: Double) -> Double {
        isOpen(time) ? time : (time / 120).rounded(.down) * 120 + 120
    }

    func scheduled(_ id: String, at instant: Double) { state.withLock { $0.instants[id] = instant } }

    /// A send of `id` leaving at `wall`, when the sender's clock said `clock` (UNIX seconds).
    func sent(_ id: String, wall: Double, clock: Double) { state.withLock { $0.sends[id, default: []].append((wall, clock)) } }

    struct Summary {
        var scheduled = 0, sent = 0, early = 0, outside = 0
        /// Seconds past a window's close of the send that left latest in a closed minute.
        var largestExcursion = 0.0
        /// Seconds from the first opening at or after the instant to the first send.
        var p99Late = 0.0, largestLate = 0.0
        var earlyIDs: [String] = []
    }

    func summary() -> Summary {
        state.withLock { state in
            var summary = Summary(scheduled: state.instants.count)
            var lateness: [Double] = []
            for (id, instant) in state.instants {
                guard let sends = state.sends[id], let first = sends.map(\.wall).min() else { continue }
                summary.sent += 1
                lateness.append(max(0, first - Self.opening(atOrAfter: instant)))
                for clock in sends.map(\.clock) {
                    // Log and clock granularity: a second's slack on the early side.
                    if clock < instant - 1 {
                        summary.early += 1
                        summary.earlyIDs.append(id)
                    }
                    if !Self.isOpen(clock) {
                        summary.outside += 1
                        summary.largestExcursion = max(summary.largestExcursion, clock - ((clock / 120).rounded(.down) * 120 + 60))
                    }
                }
            }
            lateness.sort()
            summary.largestLate = lateness.last ?? 0
            summary.p99Late = lateness.isEmpty ? 0 : lateness[min(lateness.count - 1, Int(Double(lateness.count) * 0.99))]
            return summary
        }
    }
}
