import Synchronization

/// Recipient lookups happen once per event; registrations change rarely. Every registration
/// change made through the store invalidates the cache after it committed, and a lookup that
/// raced with such a change is not cached (the generation moved while it read), so this
/// process never sees a registration late. Entries still expire, so a second process writing
/// the same file (not a supported setup) is seen within `lifetime`.
///
/// Misses of a query while it is being read wait for that read instead of reading again: the
/// events in flight for a user all miss together when the user's entry expires, and on
/// PostgreSQL each miss would be a statement of its own.
package final class TokenCache: Sendable {
    /// Equal when their texts are equal byte for byte, as the store compares them: `String`'s
    /// equality is canonical equivalence, under which one user's entry (`e` and U+0301)
    /// would answer for another's (`é`), a different registration in the store.
    package struct Query: Hashable {
        package var pipeline: String
        package var user: String?
        package var kind: String

        package init(pipeline: String, user: String?, kind: String) {
            self.pipeline = pipeline
            self.user = user
            self.kind = kind
        }

        package static func == (a: Query, b: Query) -> Bool {
            sameBytes(a.user, b.user) && sameBytes(a.pipeline, b.pipeline) && sameBytes(a.kind, b.kind)
        }

        package func hash(into hasher: inout Hasher) {
            Self.combine(user, into: &hasher)
            Self.combine(pipeline, into: &hasher)
            Self.combine(kind, into: &hasher)
        }

        private static func sameBytes(_ a: String?, _ b: String?) -> Bool {
            guard let a, let b else { return a == nil && b == nil }
            return a.utf8.count == b.utf8.count && a.utf8.elementsEqual(b.utf8)
        }

        private static func combine(_ text: String?, into hasher: inout Hasher) {
            guard var text else { return hasher.combine(0xFE as UInt8) }
            text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
            hasher.combine(0xFF as UInt8)  // never a byte of UTF-8: ends each text
        }
    }

    private struct State {
        var entries: [Query: (tokens: [DeviceToken], expires: ContinuousClock.Instant)] = [:]
        var generation: UInt64 = 0
        /// Reads under way, by query, with the misses waiting for them. Only a read's leader
        /// removes it, so a query has one at a time.
        var reading: [Query: Reading] = [:]
        /// Users whose tokens of every kind were read together (`store(_:readAt:ofEveryKindFor:pipeline:)`), by
        /// pipeline and user (kind empty), until the entries of that read expire.
        var warmed: [Query: ContinuousClock.Instant] = [:]
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

    /// The generation a read must start from to be stored (`store(_:readAt:)`).
    package func currentGeneration() -> Generation {
        state.withLock { Generation(value: $0.generation) }
    }

    /// Stores several reads made at once, unless a change raced them.
    package func store(_ reads: [Query: [DeviceToken]], readAt generation: Generation) {
        guard !reads.isEmpty else { return }
        store(reads, readAt: generation, ofEveryKindFor: [], pipeline: "")
    }

    /// Stores a read of `users`' tokens of every kind (`RegistrationStore.warmTokens`), unless a
    /// change raced it. Until these entries expire, a kind the read found none of for a user
    /// is known to have none (`[]`, not a miss), and a warm-up skips the user (`unwarmed`).
    package func store(_ reads: [Query: [DeviceToken]], readAt generation: Generation, ofEveryKindFor users: [String], pipeline: String) {
        let expires = ContinuousClock.now + lifetime
        state.withLock { state in
            guard state.generation == generation.value else { return }
            if state.entries.count + reads.count > Self.capacity || state.warmed.count + users.count > Self.capacity {
                state.entries.removeAll()
                state.warmed.removeAll()
            }
            for (query, tokens) in reads { state.entries[query] = (tokens, expires) }
            // A user the store keeps under other bytes was found under those: looked up by its
            // own, it must miss instead of having none.
            for user in users where StoredText.keepsAsIs(user) {
                state.warmed[Query(pipeline: pipeline, user: user, kind: "")] = expires
            }
        }
    }

    /// Those of `users` (without repeats) whose tokens of every kind were not read lately.
    package func unwarmed(_ users: [String], pipeline: String) -> [String] {
        let now = ContinuousClock.now
        let cold = state.withLock { state in
            users.filter { user in state.warmed[Query(pipeline: pipeline, user: user, kind: "")].map { $0 <= now } ?? true }
        }
        // Repeats are removed from the few left, not looked for among the many warm.
        var seen = Set<Query>()
        return cold.filter { seen.insert(Query(pipeline: pipeline, user: $0, kind: "")).inserted }
    }

    /// The cached tokens for `query`, or what a read of it under way returns, or what `read`
    /// returns (cached unless a change raced it).
    package func tokens(for query: Query, read: () async throws -> [DeviceToken]) async throws -> [DeviceToken] {
        switch begin(query) {
        case .hit(let tokens):
            return tokens
        case .alone(let generation):
            let tokens = try await read()
            store([query: tokens], readAt: generation)
            return tokens
        case .follow:
            switch await sharedRead(of: query) {
            case .read(let tokens): return tokens
            case .away(let error): throw error
            case .again: return try await tokens(for: query, read: read)
            }
        case .lead(let generation):
            let tokens: [DeviceToken]
            do {
                tokens = try await read()
            } catch {
                finishReading(query, with: StoreAvailability.meansAway(error) ? .away(error) : .again)
                throw error
            }
            store([query: tokens], readAt: generation)
            finishReading(query, with: .read(tokens))
            return tokens
        }
    }

    private enum Step {
        case hit([DeviceToken])
        /// Read, and give the tokens to the misses that wait for them.
        case lead(Generation)
        /// Wait for the read under way.
        case follow
        /// Read without sharing: the read under way began before a change.
        case alone(Generation)
    }

    private func begin(_ query: Query) -> Step {
        let now = ContinuousClock.now
        return state.withLock { state in
            if let entry = state.entries[query] {
                if entry.expires > now { return .hit(entry.tokens) }
            } else if let user = query.user, let warm = state.warmed[Query(pipeline: query.pipeline, user: user, kind: "")], warm > now {
                // Only where the query has no entry: an expired one says the user has tokens of
                // the kind, stored by a lookup that may have ended before this warm-up.
                return .hit([])
            }
            if let reading = state.reading[query] {
                return reading.generation == state.generation ? .follow : .alone(Generation(value: state.generation))
            }
            state.reading[query] = Reading(generation: state.generation)
            return .lead(Generation(value: state.generation))
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

    /// Ends the leader's read of `query`: its waiters get `result`.
    private func finishReading(_ query: Query, with result: SharedRead) {
        let waiting = state.withLock { $0.reading.removeValue(forKey: query)?.waiting ?? [] }
        for continuation in waiting { continuation.resume(returning: result) }
    }

    package func invalidate() {
        state.withLock { state in
            state.generation &+= 1
            state.entries.removeAll()
            state.warmed.removeAll()
        }
    }

    package struct Generation {
        package var value: UInt64
    }
}
