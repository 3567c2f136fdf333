import Synchronization

/// The tokens this process knows are marked confirmed in the store (delivered to at least
/// once, `registrations.confirmed_at`): eviction spares them (`RegistrationStore.register`).
/// The group commit marks a token at its first delivery and, remembering that here, writes
/// nothing for its next ones, so confirming costs an update per token, not per notification.
/// Bounded, and started over every `lifetime`, so a token another daemon removed and registered
/// again (a new, unconfirmed row) is marked again within that time; this process forgets a
/// token at once when it registers it.
package final class ConfirmedTokens: Sendable {
    package struct Key: Hashable, Sendable {
        package var pipeline: String
        package var user: String
        package var kind: String
        package var token: String

        package init(pipeline: String, user: String, kind: String, token: String) {
            self.pipeline = pipeline
            self.user = user
            self.kind = kind
            self.token = token
        }
    }

    private struct State {
        var keys: Set<Key> = []
        var since = ContinuousClock.now
    }

    private let state = Mutex(State())
    private let lifetime: Duration
    /// Tokens remembered at most; past that the memory starts over.
    package static var capacity: Int { 100_000 }

    package init(lifetime: Duration = .seconds(600)) {
        self.lifetime = lifetime
    }

    /// The tokens that `writes` delivered to and that may not be marked yet, each once: what a
    /// commit of them is to mark.
    package func unmarked(in writes: [OutcomeWrite]) -> [Key] {
        var found: Set<Key> = []
        var keys: [Key] = []
        state.withLock { state in
            if ContinuousClock.now - state.since > lifetime { state = State() }
            for case .outcome(let rows, _, _, _, _, _, let pipeline) in writes {
                for delivery in rows.lazy.map(\.delivery) where delivery.outcome == .delivered {
                    let key = Key(pipeline: pipeline, user: delivery.user, kind: delivery.tokenKind, token: delivery.token)
                    if !state.keys.contains(key), found.insert(key).inserted { keys.append(key) }
                }
            }
        }
        return keys
    }

    /// Called once the commit that marked `keys` succeeded.
    package func remember(_ keys: [Key]) {
        guard !keys.isEmpty else { return }
        state.withLock { state in
            if state.keys.count + keys.count > Self.capacity { state = State() }
            state.keys.formUnion(keys)
        }
    }

    /// A registration may have made a new, unconfirmed row of this token (it was removed).
    package func forget(_ token: DeviceToken, pipeline: String) {
        let key = Key(pipeline: pipeline, user: token.user, kind: token.kind, token: token.value)
        _ = state.withLock { $0.keys.remove(key) }
    }
}
