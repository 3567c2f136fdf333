/// An event another one carries (`Event.carries`): enough to write its record, which only its
/// caller may read.
public struct CarriedEvent: Sendable, Equatable {
    public var id: String
    public var caller: String?

    public init(id: String, caller: String?) {
        self.id = id
        self.caller = caller
    }
}
