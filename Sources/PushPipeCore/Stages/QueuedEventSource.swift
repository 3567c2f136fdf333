/// A source whose accepted events wait in the store under its key until processed
/// (`http.event`): the runtime needs its lease to move what earlier versions queued under the
/// source's position (`PositionKeyMove`) as its claims would take it.
public protocol QueuedEventSource: Source {
    var intake: QueuedEventIntake { get }
}
