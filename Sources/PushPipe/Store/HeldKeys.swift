import Synchronization

/// Keys held in this process (the SQLite store's holds: one daemon per file, so memory is
/// where every holder is).
final class HeldKeys: Sendable {
    private let keys = Mutex(Set<String>())

    /// Claims the keys nobody holds; returns those.
    func claim(_ wanted: Set<String>) -> Set<String> {
        keys.withLock { held in
            let free = wanted.subtracting(held)
            held.formUnion(free)
            return free
        }
    }

    func release(_ released: Set<String>) {
        guard !released.isEmpty else { return }
        keys.withLock { $0.subtract(released) }
    }
}
