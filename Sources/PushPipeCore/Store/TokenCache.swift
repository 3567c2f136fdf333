import Synchronization

/// Recipient lookups happen once per event; registrations change rarely. Every registration
/// change made through the store invalidates the cache after it committed, and a lookup that
/// raced with such a change is not cached (the generation moved while it read), so this
/// process never sees a registration late. Entries still expire, so a second process writing
/// the same file (not a supported setup) is seen within `lifetime`.
///
/// Misses of a query while it is being read wait for that read instead of reading again: the
/// events in flight for a user all miss together when the user's entry expires, and on
/// PostgreSQL each miss was a statement of its own.
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
        /// Reads under way, by query, with the misses waiting for them.
        var reading: [Query: Reading] = [:]
        var readings: UInt64 = 0
    }

    /// How a read ended for the misses that waited for it.
    private enum SharedRead {
        case read([DeviceToken])
        /// The store is away: each would wait out the outage again, so each fails at once.
        case away(any Error)
        /// Failed otherwise, or ended before the miss joined: each looks up again.
        case again
    }

    private struct Reading {
        var id: UInt64
        /// The generation the read started at: a miss at a later one reads for itself.
        var generation: UInt64
        var waiting: [CheckedContinuation<SharedRead, Never>] = []
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

    /// The cached tokens for `query`, or what a read of it under way returns, or what `read`
    /// returns (cached unless a change raced it).
    package func tokens(for query: Query, read: () async throws -> [DeviceToken]) async throws -> [DeviceToken] {
        switch begin(query) {
        case .hit(let tokens):
            return tokens
        case .alone(let generation):
            let tokens = try await read()
            store(tokens, for: query, readAt: generation)
            return tokens
        case .follow:
            switch await sharedRead(of: query) {
            case .read(let tokens): return tokens
            case .away(let error): throw error
            case .again: return try await tokens(for: query, read: read)
            }
        case .lead(let generation, let id):
            let tokens: [DeviceToken]
            do {
                tokens = try await read()
            } catch {
                finishReading(query, id: id, with: StoreAvailability.meansAway(error) ? .away(error) : .again)
                throw error
            }
            store(tokens, for: query, readAt: generation)
            finishReading(query, id: id, with: .read(tokens))
            return tokens
        }
    }

    private enum Step {
        case hit([DeviceToken])
        /// Read, and give the tokens to the misses that wait for them.
        case lead(Generation, id: UInt64)
        /// Wait for the read under way.
        case follow
        /// Read without sharing: the read under way began before a change.
        case alone(Generation)
    }

    private func begin(_ query: Query) -> Step {
        let now = ContinuousClock.now
        return state.withLock { state in
            if let entry = state.entries[query], entry.expires > now { return .hit(entry.tokens) }
            if let reading = state.reading[query] {
                return reading.generation == state.generation ? .follow : .alone(Generation(value: state.generation))
            }
            state.readings &+= 1
            state.reading[query] = Reading(id: state.readings, generation: state.generation)
            return .lead(Generation(value: state.generation), id: state.readings)
        }
    }

    /// Waits for the read of `query` under way, if there still is one begun at this generation.
    private func sharedRead(of query: Query) async -> SharedRead {
        await withCheckedContinuation { (continuation: CheckedContinuation<SharedRead, Never>) in
            let joined = state.withLock { state -> Bool in
                guard var reading = state.reading[query], reading.generation == state.generation else { return false }
                reading.waiting.append(continuation)
                state.reading[query] = reading
                return true
            }
            if !joined { continuation.resume(returning: .again) }
        }
    }

    /// Misses waiting for a read under way (tests wait for them to join).
    package var waitingForReads: Int { state.withLock { $0.reading.values.reduce(0) { $0 + $1.waiting.count } } }

    private func finishReading(_ query: Query, id: UInt64, with result: SharedRead) {
        let waiting = state.withLock { state -> [CheckedContinuation<SharedRead, Never>] in
            guard let reading = state.reading[query], reading.id == id else { return [] }
            state.reading[query] = nil
            return reading.waiting
        }
        for continuation in waiting { continuation.resume(returning: result) }
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
