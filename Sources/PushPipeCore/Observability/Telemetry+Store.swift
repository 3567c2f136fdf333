import Metrics

extension Telemetry {
    /// The store's group commits and, where it runs them itself, its WAL checkpoints. The
    /// checkpoint series appear with the first checkpoint, so a PostgreSQL daemon exports none.
    public func storeObservers(named name: String) -> StoreObservers {
        let commitLatency = timer(.storeCommitLatency, [("store", name)])
        return StoreObservers(
            commits: { duration in commitLatency.record(duration: duration) },
            checkpoints: { [self] checkpoint in
                timer(.storeCheckpointLatency, [("kind", checkpoint.kind.rawValue)]).record(duration: checkpoint.duration)
                set(.storeWALFrames, [], to: checkpoint.walFrames)
            }
        )
    }
}
