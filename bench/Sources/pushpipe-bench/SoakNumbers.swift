import Synchronization

/// Ids for the soaks' notifications and OGS games: one sequence, so every id is unique.
final class SoakNumbers: Sendable {
    private let next = Mutex(0)

    func nextID(_ prefix: String) -> String { "\(prefix)\(take())" }
    func nextGame() -> Int64 { Int64(9_000_000 + take()) }

    private func take() -> Int {
        next.withLock { number in
            number += 1
            return number
        }
    }
}
