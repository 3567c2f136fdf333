import PushPipeCore
import Synchronization

/// Keys held in this process (the SQLite store's holds: one daemon per file, so memory is
/// where every holder is).
final class HeldKeys: Sendable {
    /// A key of one stage of one pipeline. A struct, not the three joined in one string: a
    /// filter holds and releases its keys for every event, and joining and splitting them again
    /// would be most of what a hold costs.
    struct Key: Hashable, Sendable {
        let pipeline: String
        let stage: String
        let key: String
    }

    private let keys = Mutex(Set<Key>())

    /// Claims the keys of `stage` nobody holds; returns those.
    func claim(_ wanted: Set<String>, pipeline: String, stage: String) -> Set<String> {
        keys.withLock { held in
            var free = Set<String>(minimumCapacity: wanted.count)
            for key in wanted where held.insert(Key(pipeline: pipeline, stage: stage, key: key)).inserted {
                free.insert(key)
            }
            return free
        }
    }

    func release(_ released: Set<String>, pipeline: String, stage: String) {
        guard !released.isEmpty else { return }
        keys.withLock { held in
            for key in released { held.remove(Key(pipeline: pipeline, stage: stage, key: key)) }
        }
    }
}
