import Metrics

extension Telemetry {
    /// The store's group commits and, where it runs them itself, its WAL checkpoints. The
    /// checkpoint series appear with the first checkpoint, so a PostgreSQL daemon exports none.
    public func observe(_ store: any Store, named name: String) {
        let commitLatency = timer(.storeCommitLatency, [("store", name)])
        store.observeCommits { duration in commitLatency.record(duration: duration) }
        store.observeCheckpoints { [self] checkpoint in
            timer(.storeCheckpointLatency, [("kind", checkpoint.kind.rawValue)]).record(duration: checkpoint.duration)
            set(.storeWALFrames, [], to: checkpoint.walFrames)
        }
    }
}
