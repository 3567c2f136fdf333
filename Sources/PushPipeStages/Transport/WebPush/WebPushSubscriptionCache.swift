import Foundation
import Synchronization

/// Subscriptions as a send uses them, read once per stored token: a notification's `prepare`
/// and `send`, and every later notification to the same browser, would each parse the JSON,
/// decode base64url, check the point is on P-256 and find the endpoint's origin again.
/// Bounded: past `capacity` tokens it starts afresh.
final class WebPushSubscriptionCache: Sendable {
    struct Entry: Sendable {
        let subscription: WebPushSubscription
        /// The endpoint's origin, the VAPID token's audience (nil: not a URL).
        let origin: String?
        /// The keys, or why they cannot encrypt (the subscription is dropped at its send).
        let encryption: Result<WebPushEncryption, WebPushEncryption.InvalidKey>
    }

    static let capacity = 10_000
    private let entries = Mutex<[String: Entry]>([:])

    /// Tokens read and kept.
    var count: Int { entries.withLock { $0.count } }

    /// The subscription stored as `token`; throws when it is not one (`WebPushSubscription.Invalid`).
    func entry(for token: String) throws -> Entry {
        if let known = entries.withLock({ $0[token] }) { return known }
        let subscription = try WebPushSubscription(stored: token)
        let entry = Entry(
            subscription: subscription,
            origin: URL(string: subscription.endpoint).flatMap(VAPIDSigner.origin(of:)),
            encryption: Result { () throws(WebPushEncryption.InvalidKey) in
                try WebPushEncryption(p256dh: subscription.p256dh, auth: subscription.auth)
            }
        )
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[token] = entry
        }
        return entry
    }
}
