/// What a store reports as it works, given when it opens: the daemon's telemetry
/// (`Telemetry.storeObservers`), nothing elsewhere. Not part of the `Store` protocol: a store
/// calls them; nobody asks a store for them.
public struct StoreObservers: Sendable {
    /// The duration of each group commit (delivery outcomes, history, watermarks).
    public var commits: (@Sendable (Duration) -> Void)?
    /// Each checkpoint of the write-ahead log, where the store runs them itself (SQLite;
    /// PostgreSQL's server checkpoints on its own).
    public var checkpoints: (@Sendable (StoreCheckpoint) -> Void)?

    public init(commits: (@Sendable (Duration) -> Void)? = nil, checkpoints: (@Sendable (StoreCheckpoint) -> Void)? = nil) {
        self.commits = commits
        self.checkpoints = checkpoints
    }
}
