import Synchronization

/// Recipient lookups happen once per event; registrations change rarely. Every registration
/// change made through the store invalidates the cache after it committed, and a lookup that
/// raced with such a change is not cached (the generation moved while it read), so this
/// process never sees a registration late. Entries still expire, so a second process writing
/// the same file (not a supported setup) is seen within `lifetime`.
package final class TokenCache: Sendable {
    package struct Query: Hashable {
        package var pipeline: String
        package var user: String?
        package var kind: String

        package init(pipeline: String, user: String?, kind: String) {
            self.pipeline = pipeline
            self.user = user
            self.kind = kind
        }
    }

    private struct State {
        var entries: [Query: (tokens: [DeviceToken], expires: ContinuousClock.Instant)] = [:]
        var generation: UInt64 = 0
    }

    private let state = Mutex(State())
    private let lifetime: Duration
    /// Entries kept at most; past that the cache starts over.
    package static var capacity: Int { 100_000 }

    package init(lifetime: Duration = .seconds(30)) {
        self.lifetime = lifetime
    }

    package enum Lookup {
        case hit([DeviceToken])
        /// Read them, then `store` them with this generation.
        case miss(Generation)
    }

    package func lookup(_ query: Query) -> Lookup {
        let now = ContinuousClock.now
        return state.withLock { state in
            if let entry = state.entries[query], entry.expires > now { return .hit(entry.tokens) }
            return .miss(Generation(value: state.generation))
        }
    }

    package func store(_ tokens: [DeviceToken], for query: Query, readAt generation: Generation) {
        store([query: tokens], readAt: generation)
    }

    /// The generation a read must start from to be stored (`store(_:readAt:)`).
    package func currentGeneration() -> Generation {
        state.withLock { Generation(value: $0.generation) }
    }

    /// Stores several reads made at once, unless a change raced them.
    package func store(_ reads: [Query: [DeviceToken]], readAt generation: Generation) {
        guard !reads.isEmpty else { return }
        let expires = ContinuousClock.now + lifetime
        state.withLock { state in
            guard state.generation == generation.value else { return }
            if state.entries.count + reads.count > Self.capacity { state.entries.removeAll() }
            for (query, tokens) in reads { state.entries[query] = (tokens, expires) }
        }
    }

    /// The cached tokens for `query`, or what `read` returns (cached unless a change raced it).
    package func tokens(for query: Query, read: () async throws -> [DeviceToken]) async rethrows -> [DeviceToken] {
        switch lookup(query) {
        case .hit(let tokens):
            return tokens
        case .miss(let generation):
            let tokens = try await read()
            store(tokens, for: query, readAt: generation)
            return tokens
        }
    }

    package func invalidate() {
        state.withLock { state in
            state.generation &+= 1
            state.entries.removeAll()
        }
    }

    package struct Generation {
        package var value: UInt64
    }
}
