import CoreMetrics

extension Telemetry {
    /// The store's group commits and, where it runs them itself, its WAL checkpoints. The
    /// checkpoint series appear with the first checkpoint, so a PostgreSQL daemon exports none.
    public func observe(_ store: any Store, named name: String) {
        let commitLatency = timer(.storeCommitLatency, [("store", name)])
        store.observeCommits { duration in commitLatency.record(nanosecondsOf: duration) }
        store.observeCheckpoints { [self] checkpoint in
            timer(.storeCheckpointLatency, [("kind", checkpoint.kind.rawValue)]).record(nanosecondsOf: checkpoint.duration)
            set(.storeWALFrames, [], to: checkpoint.walFrames)
        }
    }
}

extension CoreMetrics.Timer {
    fileprivate func record(nanosecondsOf duration: Duration) {
        let (seconds, attoseconds) = duration.components
        recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
