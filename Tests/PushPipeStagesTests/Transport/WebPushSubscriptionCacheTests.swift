import Foundation
import PushPipeCore
import Testing

@testable import PushPipeStages

/// Subscriptions read once per token, and no more of them kept than the bound, however many
/// distinct ones arrive (anyone may register one).
@Suite struct WebPushSubscriptionCacheTests {
    static func token(_ endpoint: String, p256dh: String = WebPushRegistrationTests.p256dh) -> String {
        WebPushRegistrationTests.subscription(endpoint: endpoint, p256dh: p256dh).compactText
    }

    @Test func keepsAtMostItsCapacity() throws {
        let cache = WebPushSubscriptionCache(policy: .standard)
        for index in 0...WebPushSubscriptionCache.capacity {
            _ = try cache.entry(for: Self.token("https://push.example.net/send/\(index)"))
        }
        #expect(cache.count <= WebPushSubscriptionCache.capacity)
        #expect(cache.count >= 1, "the last one is kept")
    }

    @Test func aKeyOffTheCurveIsKeptAsItsRefusalAndTheEndpointStillParses() throws {
        let cache = WebPushSubscriptionCache(policy: .standard)
        // 65 bytes with the uncompressed marker, but no point of P-256.
        let offCurve = Data([0x04] + [UInt8](repeating: 1, count: 64)).base64URLEncodedString()
        let entry = try cache.entry(for: Self.token("https://push.example.net/send/x", p256dh: offCurve))
        #expect(entry.origin == "https://push.example.net")
        #expect(throws: WebPushEncryption.InvalidKey.self) { try entry.encryption.get() }
        #expect(throws: WebPushSubscription.Invalid.self) { try cache.entry(for: "{\"keys\": {}}") }
        #expect(cache.count == 1, "what is not a subscription is not kept")
    }
}
