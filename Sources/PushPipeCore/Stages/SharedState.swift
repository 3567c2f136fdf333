/// State in the store that stages of several pipelines share under one name (a frequency cap
/// counted across pipelines). Their `terms` must agree: a stage that keeps the state for a
/// shorter time would prune what another still counts. Pipelines that disagree are refused at
/// load, naming both places.
public struct SharedState: Sendable, Equatable {
    /// What the state is shared under (`cap:people`).
    public var name: String
    /// What every stage of that name must say alike, as people read it (`3 per 1d, 1 per 10m`).
    public var terms: String
    /// The key inside the stage that states the terms (`rules`).
    public var keyPath: String

    public init(name: String, terms: String, keyPath: String) {
        self.name = name
        self.terms = terms
        self.keyPath = keyPath
    }
}

/// A stage whose state other pipelines' stages share (`SharedState`).
public protocol SharingState {
    var sharedState: SharedState { get }
}
