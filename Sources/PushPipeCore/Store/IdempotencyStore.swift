/// The keys of accepted requests (`Idempotency-Key`, draft-ietf-httpapi-idempotency-key-header),
/// so a request sent again, after a timeout or to another daemon, is answered as the first
/// was instead of making a second event. A unique key in the store, not a cache: it holds
/// across daemons and restarts.
public protocol IdempotencyStore: Sendable {
    /// Takes `key` for this request, or tells who has it. A new key is this request's for
    /// `hold` (on the store's clock) while it is being stored; a request whose daemon
    /// died before storing it leaves the key free again after that. Keys are kept `ttl`
    /// from their first use. `holder` names this request's hold, so only it releases it.
    func claimIdempotencyKey(
        _ key: IdempotencyKey,
        fingerprint: String,
        holder: String,
        hold: Duration,
        ttl: Duration
    ) async throws -> IdempotencyClaim
    /// Keeps the answer to give again (for a request whose event is not queued: one answered
    /// after its delivery). A queued event's answer is kept with it (`QueuedEvent.answer`).
    func recordIdempotentAnswer(_ answer: IdempotentAnswer) async throws
    /// Frees a key whose request failed, so the next request with it is taken as new; a key
    /// already answered (its commit reported a failure but happened) is kept, and so is a hold
    /// another request took over after `holder`'s lapsed (that request is still being stored).
    func releaseIdempotencyKey(_ key: IdempotencyKey, holder: String) async throws
    /// Deletes a key, answered or not: for a request whose stored event was taken back (its
    /// pipeline stopped before taking it), whose answer must not be given again.
    func withdrawIdempotencyKey(_ key: IdempotencyKey) async throws
}

/// A client's key, scoped to one route and one credential: two backends, or two routes, may
/// use the same key for different things.
public struct IdempotencyKey: Sendable, Hashable {
    public var pipeline: String
    /// The route and who called it (`POST /events token`, `POST /events user:42`).
    public var scope: String
    public var key: String

    public init(pipeline: String, scope: String, key: String) {
        self.pipeline = pipeline
        self.scope = scope
        self.key = key
    }
}

/// What a key says about the request that carries it.
public enum IdempotencyClaim: Sendable, Equatable {
    /// The key is this request's: go on, and store the answer with the event.
    case claimed
    /// Answered before: give the same answer again.
    case answered(status: Int, body: JSON)
    /// The key was used for another request (another body).
    case usedForAnotherRequest
    /// The first request with the key is still being stored.
    case inProgress

    /// What a key's row, as both stores keep it, says to a new request with `fingerprint`: the
    /// one rule, here so the stores cannot disagree on it. nil: nothing was answered under the
    /// key and its holder is gone (`lapsed`, its hold ran out), so the new request takes it
    /// over, with its own body: the first one never got an answer.
    package static func of(stored: String, status: Int?, body: String?, lapsed: Bool, fingerprint: String) throws -> IdempotencyClaim? {
        if let status, let body {
            return stored == fingerprint ? .answered(status: status, body: try JSON.parse(body)) : .usedForAnotherRequest
        }
        if lapsed { return nil }
        return stored == fingerprint ? .inProgress : .usedForAnotherRequest
    }
}

/// An answer kept under its key.
public struct IdempotentAnswer: Sendable, Equatable {
    public var key: IdempotencyKey
    public var status: Int
    public var body: JSON

    public init(key: IdempotencyKey, status: Int, body: JSON) {
        self.key = key
        self.status = status
        self.body = body
    }
}
