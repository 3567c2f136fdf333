import PushPipeCore
import PushPipePostgres
import PushPipeSQLite
import PushPipeTesting
import Synchronization

/// What the soak accepted and what APNs answered 200 for, by notification id.
final class SoakLedger: SoakAccounting {
    private struct State {
        var accepted = Set<String>()
        var delivered: [String: Int] = [:]
    }

    private let state = Mutex(State())

    private let numbers = SoakNumbers()
    func nextID(_ prefix: String) -> String { numbers.nextID(prefix) }
    func nextGame() -> Int64 { numbers.nextGame() }

    func accept(_ id: String) { state.withLock { _ = $0.accepted.insert(id) } }

    /// Records what a request accepted with 200 carried: an event id, a reply's message id, OGS game ids.
    func delivered(_ request: APNsStandIn.Request) {
        guard let body = request.body else { return }
        var ids: [String] = []
        if let id = body["id"]?.stringValue { ids.append(id) }
        if let id = body["message_id"]?.stringValue { ids.append(id) }
        for game in body["game_ids"]?.arrayValue ?? [] { if let id = game.intValue { ids.append("g\(id)") } }
        state.withLock { state in for id in ids { state.delivered[id, default: 0] += 1 } }
    }

    var lost: Int { state.withLock { state in state.accepted.filter { state.delivered[$0] == nil }.count } }

    var progress: String {
        state.withLock { state in
            let waiting = state.accepted.filter { state.delivered[$0] == nil }
            return "\(state.accepted.count) accepted, \(waiting.count) not delivered yet \(waiting.sorted().prefix(5))"
        }
    }

    func summary(kills: Int, integrity: String) -> String {
        state.withLock { state in
            let delivered = state.accepted.filter { state.delivered[$0] != nil }.count
            let lost = state.accepted.count - delivered
            let duplicated = state.delivered.values.filter { $0 > 1 }.count
            let extraSends = state.delivered.values.reduce(0) { $0 + max(0, $1 - 1) }
            return "soak: accepted \(state.accepted.count), delivered \(delivered), lost \(lost), sent more than once \(duplicated) "
                + "(\(extraSends) extra sends over \(kills) SIGKILLs), integrity_check \(integrity)"
        }
    }
}

/// SplitMix64 behind a lock: the same seed gives the same schedule of faults and kills.
final class SeededRandom: Sendable {
    private let state: Mutex<UInt64>

    init(seed: UInt64) { state = Mutex(seed) }

    /// A number in 0..<bound.
    func next(_ bound: Int) -> Int {
        let value = state.withLock { state -> UInt64 in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return Int(value % UInt64(bound))
    }
}
