/// One copy of a write-ahead log back into the database file, as a store reports it to
/// operators: a WAL that its checkpoints never empty grows without bound, and a long
/// checkpoint shows up as commits that wait.
public struct StoreCheckpoint: Sendable {
    public enum Kind: String, Sendable, Equatable {
        /// On a connection of its own, beside the writer.
        case background
        /// On the writer, the frames a background pass left behind.
        case catchUp = "catch_up"
    }

    public var kind: Kind
    /// Frames in the WAL when the checkpoint ran, and how many of them are in the database file now.
    public var walFrames: Int
    public var checkpointedFrames: Int
    public var duration: Duration

    public init(kind: Kind, walFrames: Int, checkpointedFrames: Int, duration: Duration) {
        self.kind = kind
        self.walFrames = walFrames
        self.checkpointedFrames = checkpointedFrames
        self.duration = duration
    }
}
