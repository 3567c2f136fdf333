/// One item of durable work a pipeline keeps in its store until a daemon has done it: a webhook
/// outcome waiting for its receiver today, a scheduled send or a digest next. Every kind is
/// held the same way (`WorkQueue`), so leases, due times and retries are written once per
/// store instead of once per mechanism.
public struct WorkItem: Sendable, Equatable {
    /// Assigned by the store when the item is added (0 before), in the order of addition.
    public var id: Int64
    /// What the item is for (`webhook`, …): each mechanism claims its own kind.
    public var kind: String
    /// Unique within the pipeline and kind: an item added again under a key that still waits
    /// is not added twice.
    public var key: String
    public var payload: JSON
    /// Attempts that ended in `retry`.
    public var attempts: Int
    /// When it was added (UNIX seconds): retention removes what waited too long.
    public var createdAt: Double
    /// Items of one group are claimed together, whole, whatever the limit (a webhook's batch).
    public var group: String?
    /// How far a long item got, saved in the commit of its last step's outcome: the
    /// next claim, by this daemon or another, goes on from there.
    public var cursor: String?

    public init(
        id: Int64 = 0,
        kind: String,
        key: String,
        payload: JSON,
        attempts: Int = 0,
        createdAt: Double,
        group: String? = nil,
        cursor: String? = nil
    ) {
        self.id = id
        self.kind = kind
        self.key = key
        self.payload = payload
        self.attempts = attempts
        self.createdAt = createdAt
        self.group = group
        self.cursor = cursor
    }

    /// The due time of an item no claim takes: a mark `admit` adds, an item `accumulate`
    /// adds, a cursor an outcome saves (`DeliveryStore.recordOutcome(…, progress:)`). The same
    /// on every store, and short of `takenKeysFallDue`, so none is a taken key either.
    public static let neverDue: Double = 1e299
}
