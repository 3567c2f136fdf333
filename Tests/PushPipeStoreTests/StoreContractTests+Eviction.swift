import Foundation
import PushPipeCore
import Testing

extension StoreContractTests {
    /// Anonymous registrations of made-up tokens for a real user's id must not evict the
    /// user's phone (`max_tokens_per_user`). A token the daemon delivered to is confirmed, and
    /// eviction removes unconfirmed tokens first, oldest first; a confirmed one goes only when
    /// every other kept token is confirmed too. The token just registered always stays.
    func tokenEviction(_ store: any Store) async throws {
        let pipeline = "evict"
        func register(_ value: String, user: String = "1783478") async throws {
            try await store.pipeline(pipeline).register(
                DeviceToken(user: user, kind: "device", value: value),
                environment: nil,
                replace: false,
                keepingAtMost: 3
            )
        }
        func deliver(_ value: String, user: String = "1783478", outcome: DeliveryOutcome = .delivered) async throws {
            try await store.pipeline(pipeline).recordOutcome(
                deliveries: [.of("e-\(value)", user: user, token: value, outcome: outcome, at: Date().timeIntervalSince1970)],
                state: []
            )
        }
        func tokens(_ user: String = "1783478") async throws -> [String] {
            try await store.pipeline(pipeline).tokens(user: user, kind: "device").map(\.value).sorted()
        }

        try await register("phone")
        try await deliver("phone")
        try await deliver("phone")
        try await register("tablet")
        try await deliver("tablet", outcome: .retryAfter)
        // A delivered outcome of another pipeline, user or kind confirms nothing here.
        try await register("fake0")
        try await store.pipeline("elsewhere").recordOutcome(
            deliveries: [.of("x", user: "1783478", token: "fake0", at: Date().timeIntervalSince1970)],
            state: []
        )
        for fake in 1...10 { try await register("fake\(fake)") }
        #expect(
            try await tokens() == ["fake10", "fake9", "phone"],
            "ten fake registrations evict each other and the failing tablet, never the phone that received notifications"
        )

        // Registered again, the phone stays confirmed (by recency alone it would go at fake13).
        try await register("phone")
        for fake in 11...13 { try await register("fake\(fake)") }
        #expect(try await tokens() == ["fake12", "fake13", "phone"])

        // Every other kept token confirmed: the least recently registered confirmed one goes,
        // and the new one stays; the next unconfirmed one then pushes out the unconfirmed one.
        for device in ["c1", "c2", "c3"] {
            try await register(device, user: "carol")
            try await deliver(device, user: "carol")
        }
        try await register("c4", user: "carol")
        #expect(try await tokens("carol") == ["c2", "c3", "c4"], "all confirmed: the oldest confirmed goes")
        try await register("c5", user: "carol")
        #expect(try await tokens("carol") == ["c2", "c3", "c5"], "c4 was never delivered to: it goes before a confirmed one")

        // A token removed (the provider said it is gone) and registered again is a new row,
        // confirmed again by its next delivery, though this process marked it before.
        #expect(try await store.pipeline(pipeline).removeToken(kind: "device", token: "c2", unlessUpdatedAfter: nil))
        try await register("c2", user: "carol")
        try await deliver("c2", user: "carol")
        try await register("c6", user: "carol")
        try await register("c7", user: "carol")
        #expect(try await tokens("carol") == ["c2", "c3", "c7"], "c2 is confirmed again, c6 is not")
        // Without a delivery since, it is unconfirmed.
        #expect(try await store.pipeline(pipeline).removeToken(kind: "device", token: "c2", unlessUpdatedAfter: nil))
        try await register("c2", user: "carol")
        try await register("c8", user: "carol")
        try await register("c9", user: "carol")
        #expect(try await tokens("carol") == ["c3", "c8", "c9"], "the registration of a removed token does not bring its confirmation back")
    }
}
