import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipeSQLite

@Suite struct TokenCacheTests {
    let query = TokenCache.Query(pipeline: "p", user: "u", kind: "device")
    let token = DeviceToken(user: "u", kind: "device", value: String(repeating: "ab", count: 32))

    @Test func aLookupThatRacedWithAnInvalidationIsNotCached() {
        let cache = TokenCache()
        guard case .miss(let generation) = cache.lookup(query) else {
            Issue.record("empty cache hit")
            return
        }
        cache.invalidate()  // a registration committed while the lookup was reading
        cache.store([token], for: query, readAt: generation)
        guard case .miss(let next) = cache.lookup(query) else {
            Issue.record("a stale read was cached")
            return
        }
        cache.store([token], for: query, readAt: next)
        guard case .hit(let tokens) = cache.lookup(query) else {
            Issue.record("a clean read was not cached")
            return
        }
        #expect(tokens.map(\.value) == [token.value])
    }

    @Test func entriesExpire() {
        let cache = TokenCache(lifetime: .zero)
        guard case .miss(let generation) = cache.lookup(query) else { return }
        cache.store([token], for: query, readAt: generation)
        guard case .miss = cache.lookup(query) else {
            Issue.record("an expired entry was served")
            return
        }
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
}
