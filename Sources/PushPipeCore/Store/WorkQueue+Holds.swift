/// The kinds of a stage's holds (`StageStateStore.hold`) where they are taken keys of the work
/// queue (`PipelineStore`'s default: daemons sharing a database respect each other's holds):
/// one kind per stage, so a stage's keys never meet another's.
extension WorkItem {
    public static let holdKinds = "hold:"

    public static func holdKind(stage: String) -> String { holdKinds + stage }
}

/// When taken keys fall due: never, so no claim returns them as work.
public let takenKeysFallDue: Double = 1e300
