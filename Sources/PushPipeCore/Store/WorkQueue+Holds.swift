/// A stage's holds (`StageStateStore.hold`) as taken keys of the work queue, where a store
/// keeps them in its database (daemons sharing it respect each other's holds): one kind per
/// stage, so a stage's keys never meet another's.
extension WorkItem {
    public static let holdKinds = "hold:"

    public static func holdKind(stage: String) -> String { holdKinds + stage }
}

/// When taken keys fall due: never, so no claim returns them as work.
public let takenKeysFallDue: Double = 1e300
