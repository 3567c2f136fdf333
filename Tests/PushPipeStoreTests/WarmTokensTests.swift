import PushPipePostgresTesting
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipePostgres

/// The users of a batch of events are read at once before the renderer looks each one up
/// (`RegistrationStore.warmTokens`): what the read caches is what each lookup would have read.
@Suite struct WarmTokensTests {
    static let users = ["alice", "bob", "carol", "\u{E9}ve", "e\u{301}ve"]
    static let kinds = ["device", "web"]

    @Test(arguments: StoreBackend.available)
    func aWarmUpCachesWhatEachLookupReads(_ backend: StoreBackend) async throws {
        try await Self.withStore(backend) { store in
            let pipeline = store.pipeline("w")
            let registered = [
                ("alice", "device", "a1"), ("alice", "device", "a2"), ("alice", "web", "a3"), ("bob", "device", "b1"),
                ("\u{E9}ve", "device", "e1"), ("e\u{301}ve", "device", "e2"), ("e\u{301}ve", "web", "e3"),
            ]
            for (user, kind, value) in registered {
                try await pipeline.register(DeviceToken(user: user, kind: kind, value: value), environment: nil, replace: false)
            }
            let cache = try #require((pipeline as? any GroupCommittedPipelineStore)?.tokenCache)
            // Another pipeline's user of the same name is not warmed by this one's read.
            try await store.pipeline("other").register(DeviceToken(user: "carol", kind: "device", value: "c1"), environment: nil, replace: false)
            #expect(cache.unwarmed(Self.users, pipeline: "w") == Self.users)
            try await pipeline.warmTokens(users: Self.users + ["alice"])
            #expect(cache.unwarmed(Self.users, pipeline: "w").isEmpty)

            struct NotCached: Error {}
            var cached: [TokenCache.Query: [DeviceToken]] = [:]
            for user in Self.users {
                for kind in Self.kinds {
                    let query = TokenCache.Query(pipeline: "w", user: user, kind: kind)
                    // Only what the cache holds: a read here fails the test.
                    cached[query] = try await cache.tokens(for: query) { throw NotCached() }
                }
            }
            // Read again, one by one, from the database.
            cache.invalidate()
            for (query, tokens) in cached {
                let read = try await pipeline.tokens(user: query.user, kind: query.kind)
                #expect(read.map(\.value) == tokens.map(\.value), "\(query.user ?? "") \(query.kind)")
            }
            #expect(cached[TokenCache.Query(pipeline: "w", user: "alice", kind: "device")]?.count == 2)
            #expect(cached[TokenCache.Query(pipeline: "w", user: "\u{E9}ve", kind: "device")]?.map(\.value) == ["e1"])
            #expect(cached[TokenCache.Query(pipeline: "w", user: "e\u{301}ve", kind: "device")]?.map(\.value) == ["e2"])
            #expect(cached[TokenCache.Query(pipeline: "w", user: "carol", kind: "device")]?.isEmpty == true)
        }
    }

    /// The backend's store, with recipients cached for an hour: PostgreSQL's second would let a
    /// busy machine expire the warm-up before the test looks.
    static func withStore(_ backend: StoreBackend, _ body: (any Store) async throws -> Void) async throws {
        guard backend == .postgres else { return try await backend.withStore(body) }
        let location = try await TestStores.freshPostgresDatabase()
        let store = try await PostgresStore(location: location, logger: StoreBackend.logger, tokenLifetime: .seconds(3600))
        try await withCleanup({ try await body(store) }, cleanup: { try? await store.close() })
    }
}

/// A batch's users' settings in one read (`settings(of:)`): each user's as `settings(user:)`
/// reads them, in the order asked, canonically equivalent ids apart.
@Suite struct SettingsOfUsersTests {
    @Test(arguments: StoreBackend.available)
    func aBatchsSettingsAreEachUsersOwn(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let pipeline = store.pipeline("s")
            try await pipeline.setSettings(["enabled": false, "zone": "Europe/Paris"], user: "alice")
            try await pipeline.setSettings(["enabled": true], user: "\u{E9}ve")
            try await pipeline.setSettings(["quiet": "22:00-07:00"], user: "e\u{301}ve")
            try await store.pipeline("other").setSettings(["enabled": false], user: "bob")
            let awkward = ["a\"b", "a\\b", "line\nbreak", "tab\there", "\u{1F600}", "trailing ", "Alice", "\u{1}"]
            for user in awkward { try await pipeline.setSettings(["who": .string(user)], user: user) }
            let users = ["e\u{301}ve", "bob", "alice", "\u{E9}ve"] + awkward + ["alice"]
            let read = try await pipeline.settings(of: users)
            #expect(read.count == users.count)
            for (user, settings) in zip(users, read) {
                #expect(settings == (try await pipeline.settings(user: user)), "\(user)")
            }
            #expect(read[1].isEmpty, "another pipeline's user of the same name")
            #expect(read[0]["quiet"] == "22:00-07:00" && read[3]["enabled"] == true)
            for (index, user) in awkward.enumerated() { #expect(read[4 + index]["who"]?.stringValue == user, "\(user.debugDescription)") }
            #expect(read.last == read[2], "a user asked twice")
            #expect(try await pipeline.settings(of: []).isEmpty)
        }
    }
}

@Suite struct SettingsAheadTests {
    /// A batch's filters may take long: past its lifetime the read answers nothing, and the
    /// filter reads the store.
    @Test func aReadAnswersForItsLifetimeOnly() {
        let clock = ManualClock()
        let read = SettingsAhead(users: ["u"], settings: [["enabled": false]], clock: clock)
        #expect(read["u"] == ["enabled": false])
        #expect(read["v"] == nil)
        #expect(read["u\u{0}"] == nil)
        clock.advance(by: SettingsAhead.lifetime - .milliseconds(1))
        #expect(read["u"] == ["enabled": false])
        clock.advance(by: .milliseconds(1))
        #expect(read["u"] == nil)
    }
}
