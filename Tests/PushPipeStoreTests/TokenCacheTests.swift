import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipeSQLite

@Suite(.timeLimit(.minutes(1))) struct TokenCacheTests {
    let query = TokenCache.Query(pipeline: "p", user: "u", kind: "device")
    let token = DeviceToken(user: "u", kind: "device", value: String(repeating: "ab", count: 32))

    @Test func aLookupThatRacedWithAnInvalidationIsNotCached() async throws {
        let cache = TokenCache()
        let reads = ObservedState(0)
        let read: @Sendable () async throws -> [DeviceToken] = {
            reads.update { $0 += 1 }
            return [token]
        }
        _ = try await cache.tokens(for: query) {
            cache.invalidate()  // a registration committed while the lookup was reading
            return [token]
        }
        _ = try await cache.tokens(for: query, read: read)
        #expect(reads.value == 1, "a stale read was cached")
        #expect(try await cache.tokens(for: query, read: read).map(\.value) == [token.value])
        #expect(reads.value == 1, "a clean read was not cached")
    }

    @Test func entriesExpire() async throws {
        let cache = TokenCache(lifetime: .zero)
        let reads = ObservedState(0)
        for _ in 0..<2 {
            _ = try await cache.tokens(for: query) {
                reads.update { $0 += 1 }
                return [token]
            }
        }
        #expect(reads.value == 2, "an expired entry was served")
    }

    /// The events in flight for a user miss together when the entry expires: one read serves
    /// them all. Entries expire at once here, so a miss that did not wait would read itself.
    @Test func missesOfAQueryBeingReadShareItsRead() async throws {
        let cache = TokenCache(lifetime: .zero)
        let reads = ObservedState(0)
        let release = Gate()
        let read: @Sendable () async throws -> [DeviceToken] = {
            reads.update { $0 += 1 }
            await release.wait()
            return [token]
        }
        try await withThrowingTaskGroup(of: [DeviceToken].self) { group in
            // Opened however the test ends: the group waits for every reader.
            defer { release.open() }
            for _ in 0..<5 { group.addTask { try await cache.tokens(for: query, read: read) } }
            try await eventually("one read and four misses waiting for it") { reads.value == 1 && cache.waitingForReads == 4 }
            release.open()
            for try await tokens in group { #expect(tokens.map(\.value) == [token.value]) }
        }
        #expect(reads.value == 1)
    }

    /// A read that fails is not passed on: the misses that waited for it read again.
    @Test func aFailedReadIsNotPassedOn() async throws {
        let cache = TokenCache(lifetime: .zero)
        let release = Gate()
        struct Refused: Error {}
        defer { release.open() }
        let leader = Task {
            try await cache.tokens(for: query) {
                await release.wait()
                throw Refused()
            }
        }
        try await eventually("the first read under way") { release.waiting == 1 }
        let followers = (0..<3).map { _ in Task { try await cache.tokens(for: query) { [token] } } }
        try await eventually("three misses waiting for it") { cache.waitingForReads == 3 }
        release.open()
        await #expect(throws: Refused.self) { try await leader.value }
        for follower in followers { #expect(try await follower.value.map(\.value) == [token.value]) }
    }

    /// While the store is away its operations fail at once (`StoreAvailability`): the misses
    /// that waited for a read the outage failed fail with it, instead of each waiting it out again.
    @Test func aReadTheOutageFailedFailsItsWaitersAtOnce() async throws {
        let cache = TokenCache(lifetime: .zero)
        let release = Gate()
        defer { release.open() }
        let away = StoreTimeoutError(store: "test", waited: .seconds(5), what: "connection")
        let reads = ObservedState(0)
        let leader = Task {
            try await cache.tokens(for: query) {
                await release.wait()
                throw away
            }
        }
        try await eventually("the first read under way") { release.waiting == 1 }
        let followers = (0..<3).map { _ in
            Task {
                try await cache.tokens(for: query) {
                    reads.update { $0 += 1 }
                    return [token]
                }
            }
        }
        try await eventually("three misses waiting for it") { cache.waitingForReads == 3 }
        release.open()
        await #expect(throws: StoreTimeoutError.self) { try await leader.value }
        for follower in followers { await #expect(throws: StoreTimeoutError.self) { try await follower.value } }
        #expect(reads.value == 0, "none read again")
    }

    /// A registration changed while a read was under way: a miss after the change does not wait
    /// for that read, which may not show it.
    @Test func aReadBegunBeforeAChangeIsNotShared() async throws {
        let cache = TokenCache()
        let release = Gate()
        defer { release.open() }
        let stale = Task {
            try await cache.tokens(for: query) {
                await release.wait()
                return []
            }
        }
        try await eventually("the first read under way") { release.waiting == 1 }
        cache.invalidate()
        #expect(try await cache.tokens(for: query) { [token] }.map(\.value) == [token.value], "read again, not waited for")
        release.open()
        #expect(try await stale.value.isEmpty)
        let cached = try await cache.tokens(for: query) {
            Issue.record("the read after the change was not cached")
            return []
        }
        #expect(cached.map(\.value) == [token.value], "the stale read was not cached over it")
    }

    @Test func registrationsThroughTheStoreAreSeenAtOnce() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        #expect(try await store.pipeline("p").tokens(user: "u", kind: "device").isEmpty)
        try await store.pipeline("p").register(token, environment: nil, replace: false)
        #expect(try await store.pipeline("p").tokens(user: "u", kind: "device").map(\.value) == [token.value])
        _ = try await store.pipeline("p").removeToken(kind: "device", token: token.value, unlessUpdatedAfter: nil)
        #expect(try await store.pipeline("p").tokens(user: "u", kind: "device").isEmpty)
        try await store.close()
    }

    /// Two users whose ids are canonically equivalent but differ in bytes are two rows in the
    /// store, and two entries here: the one cached must not answer for the other.
    @Test func canonicallyEquivalentUsersAreTwoEntries() async throws {
        let cache = TokenCache()
        let composed = TokenCache.Query(pipeline: "p", user: "\u{E9}ve", kind: "device")
        let decomposed = TokenCache.Query(pipeline: "p", user: "e\u{301}ve", kind: "device")
        _ = try await cache.tokens(for: composed) { [token] }
        let reads = ObservedState(0)
        let other = try await cache.tokens(for: decomposed) {
            reads.update { $0 += 1 }
            return []
        }
        #expect(reads.value == 1 && other.isEmpty, "another user's entry answered")
        #expect(Set([composed, decomposed]).count == 2)
    }

    /// A warm-up reads every kind of its users' tokens: a kind it found none of is none,
    /// until the entries expire or a registration changes.
    @Test func aWarmedUserHasNoneOfAKindTheReadDidNotFind() async throws {
        let cache = TokenCache()
        cache.store([query: [token]], readAt: cache.currentGeneration(), ofEveryKindFor: ["u"], pipeline: "p")
        struct NotCached: Error {}
        let web = TokenCache.Query(pipeline: "p", user: "u", kind: "web")
        #expect(try await cache.tokens(for: query) { throw NotCached() }.map(\.value) == [token.value])
        #expect(try await cache.tokens(for: web) { throw NotCached() }.isEmpty)
        #expect(cache.unwarmed(["u", "v", "v"], pipeline: "p") == ["v"])
        #expect(cache.unwarmed(["u"], pipeline: "q") == ["u"], "warm in its own pipeline only")
        cache.invalidate()
        #expect(cache.unwarmed(["u"], pipeline: "p") == ["u"])
        #expect(try await cache.tokens(for: web) { [token] }.count == 1, "a change ends what the warm-up knew")

        let expiring = TokenCache(lifetime: .zero)
        expiring.store([:], readAt: expiring.currentGeneration(), ofEveryKindFor: ["u"], pipeline: "p")
        #expect(try await expiring.tokens(for: web) { [token] }.count == 1, "an expired warm-up answered")
        #expect(expiring.unwarmed(["u"], pipeline: "p") == ["u"])
    }

    /// A warm-up that raced a change stores nothing; a user the store keeps under other bytes
    /// (a NUL replaced) is found under those, so its own id still misses instead of having none.
    @Test func aWarmUpStoresOnlyWhatItCanVouchFor() async throws {
        let cache = TokenCache()
        let generation = cache.currentGeneration()
        cache.invalidate()
        cache.store([query: [token]], readAt: generation, ofEveryKindFor: ["u"], pipeline: "p")
        #expect(cache.unwarmed(["u"], pipeline: "p") == ["u"])
        cache.store([:], readAt: cache.currentGeneration(), ofEveryKindFor: ["a\u{0}b"], pipeline: "p")
        #expect(cache.unwarmed(["a\u{0}b"], pipeline: "p") == ["a\u{0}b"])
        let reads = ObservedState(0)
        _ = try await cache.tokens(for: TokenCache.Query(pipeline: "p", user: "a\u{0}b", kind: "device")) {
            reads.update { $0 += 1 }
            return [token]
        }
        #expect(reads.value == 1)
    }
}
