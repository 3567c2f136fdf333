import PushPipeCore
import Testing

extension StoreContractTests {
    /// A key is one request's: taken, answered, refused for another body, free again after a
    /// failure, a dead holder or its time to live; an event's answer is kept with it.
    func idempotency(_ store: any Store) async throws {
        let key = IdempotencyKey(pipeline: "i", scope: "POST /events token:ab12", key: "k1")
        #expect(try await store.claimIdempotencyKey(key, fingerprint: "f1", hold: .seconds(60), ttl: .seconds(3600)) == .claimed)
        #expect(
            try await store.claimIdempotencyKey(key, fingerprint: "f1", hold: .seconds(60), ttl: .seconds(3600)) == .inProgress,
            "while it is stored"
        )
        #expect(try await store.claimIdempotencyKey(key, fingerprint: "f2", hold: .seconds(60), ttl: .seconds(3600)) == .usedForAnotherRequest)
        let otherScope = IdempotencyKey(pipeline: "i", scope: "POST /events token:cd34", key: "k1")
        #expect(
            try await store.claimIdempotencyKey(otherScope, fingerprint: "f2", hold: .seconds(60), ttl: .seconds(3600)) == .claimed,
            "scoped to the credential"
        )

        try await store.recordIdempotentAnswer(IdempotentAnswer(key: key, status: 200, body: ["id": "e1"]))
        #expect(
            try await store.claimIdempotencyKey(key, fingerprint: "f1", hold: .seconds(60), ttl: .seconds(3600))
                == .answered(status: 200, body: ["id": "e1"])
        )
        #expect(try await store.claimIdempotencyKey(key, fingerprint: "f2", hold: .seconds(60), ttl: .seconds(3600)) == .usedForAnotherRequest)

        // A request whose commit failed ambiguously releases its key, but the answer
        // was stored after all: it stays, or a retry would make a second event.
        try await store.releaseIdempotencyKey(key)
        #expect(
            try await store.claimIdempotencyKey(key, fingerprint: "f1", hold: .seconds(60), ttl: .seconds(3600))
                == .answered(status: 200, body: ["id": "e1"]),
            "an answered key is never released"
        )
        // A stored event taken back (its pipeline stopped before taking it): its answer goes with it.
        try await store.withdrawIdempotencyKey(key)
        #expect(
            try await store.claimIdempotencyKey(key, fingerprint: "f1", hold: .seconds(60), ttl: .seconds(3600)) == .claimed,
            "withdrawn, answered or not"
        )
        let failed = IdempotencyKey(pipeline: "i", scope: "POST /events token:ab12", key: "failed")
        #expect(try await store.claimIdempotencyKey(failed, fingerprint: "f1", hold: .seconds(60), ttl: .seconds(3600)) == .claimed)
        try await store.releaseIdempotencyKey(failed)
        #expect(
            try await store.claimIdempotencyKey(failed, fingerprint: "f2", hold: .seconds(60), ttl: .seconds(3600)) == .claimed,
            "free again after a failure"
        )

        // Its holder died before storing anything: the next request takes it, even with another body.
        let abandoned = IdempotencyKey(pipeline: "i", scope: "s", key: "abandoned")
        #expect(try await store.claimIdempotencyKey(abandoned, fingerprint: "f1", hold: .seconds(-1), ttl: .seconds(3600)) == .claimed)
        #expect(try await store.claimIdempotencyKey(abandoned, fingerprint: "f2", hold: .seconds(60), ttl: .seconds(3600)) == .claimed)
        #expect(try await store.claimIdempotencyKey(abandoned, fingerprint: "f2", hold: .seconds(60), ttl: .seconds(3600)) == .inProgress)

        // A request slower than its hold fails and releases the key, which another
        // request (the client's retry) took over meanwhile and is storing: that hold stays, or
        // a third request would be taken as new and make a second event.
        let slow = IdempotencyKey(pipeline: "i", scope: "s", key: "slow")
        #expect(try await store.claimIdempotencyKey(slow, fingerprint: "f1", holder: "first", hold: .seconds(-1), ttl: .seconds(3600)) == .claimed)
        #expect(try await store.claimIdempotencyKey(slow, fingerprint: "f1", holder: "retry", hold: .seconds(60), ttl: .seconds(3600)) == .claimed)
        try await store.releaseIdempotencyKey(slow, holder: "first")
        #expect(
            try await store.claimIdempotencyKey(slow, fingerprint: "f1", holder: "third", hold: .seconds(60), ttl: .seconds(3600)) == .inProgress,
            "the retry still holds it"
        )
        try await store.releaseIdempotencyKey(slow, holder: "retry")
        #expect(
            try await store.claimIdempotencyKey(slow, fingerprint: "f1", holder: "third", hold: .seconds(60), ttl: .seconds(3600)) == .claimed,
            "released by its holder"
        )

        // Stored with its event, in one transaction.
        let queuedKey = IdempotencyKey(pipeline: "i", scope: "s", key: "queued")
        #expect(try await store.claimIdempotencyKey(queuedKey, fingerprint: "f", hold: .seconds(60), ttl: .seconds(3600)) == .claimed)
        var event = QueuedEvent(pipeline: "i", source: "src", eventID: "q1", user: "u", time: 1, body: ["n": 1], lease: .seconds(60))
        event.answer = IdempotentAnswer(key: queuedKey, status: 202, body: ["id": "q1"])
        try await store.enqueue(event)
        #expect(
            try await store.claimIdempotencyKey(queuedKey, fingerprint: "f", hold: .seconds(60), ttl: .seconds(3600))
                == .answered(status: 202, body: ["id": "q1"])
        )

        // Past its time to live a key is new, and retention removes it.
        let expired = IdempotencyKey(pipeline: "i", scope: "s", key: "expired")
        #expect(try await store.claimIdempotencyKey(expired, fingerprint: "f1", hold: .seconds(60), ttl: .seconds(-1)) == .claimed)
        #expect(try await store.claimIdempotencyKey(expired, fingerprint: "f2", hold: .seconds(60), ttl: .seconds(-1)) == .claimed)
        #expect(try await store.pipeline("i").pruneExpiredIdempotencyKeys(limit: 100) == 1)
        #expect(try await store.pipeline("i").pruneExpiredIdempotencyKeys(limit: 100) == 0)
        #expect(
            try await store.claimIdempotencyKey(queuedKey, fingerprint: "f", hold: .seconds(60), ttl: .seconds(3600))
                == .answered(status: 202, body: ["id": "q1"]),
            "a live key is kept"
        )
    }
}

/// The contract's single requests: one holder unless a check is about holders.
extension IdempotencyStore {
    func claimIdempotencyKey(_ key: IdempotencyKey, fingerprint: String, hold: Duration, ttl: Duration) async throws -> IdempotencyClaim {
        try await claimIdempotencyKey(key, fingerprint: fingerprint, holder: "a request", hold: hold, ttl: ttl)
    }

    func releaseIdempotencyKey(_ key: IdempotencyKey) async throws {
        try await releaseIdempotencyKey(key, holder: "a request")
    }
}
