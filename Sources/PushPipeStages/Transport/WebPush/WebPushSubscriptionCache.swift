import Foundation
import PushPipeCore
import Synchronization

/// Subscriptions as a send uses them, read once per stored token: a notification's `prepare`
/// and `send`, and every later notification to the same browser, would each parse the JSON,
/// decode base64url, check the point is on P-256 and find the endpoint's origin again.
/// Bounded: past `capacity` tokens it starts afresh.
final class WebPushSubscriptionCache: Sendable {
    /// The transport's egress policy, which judges an endpoint the same way every time.
    let policy: EgressPolicy

    init(policy: EgressPolicy) {
        self.policy = policy
    }

    struct Entry: Sendable {
        let subscription: WebPushSubscription
        /// The endpoint's origin, the VAPID token's audience (nil: not a URL).
        let origin: String?
        /// The endpoint's origin as the egress policy names it, or why it refuses the endpoint
        /// (checked before anything is resolved; the addresses are checked at each connect).
        let checkedOrigin: Result<String, EgressRefusal>
        /// The keys, or why they cannot encrypt (the subscription is dropped at its send).
        let encryption: Result<WebPushEncryption, WebPushEncryption.InvalidKey>
        /// Where an HTTP/2 request goes (nil: not an https URL with a host).
        let target: Target?
    }

    /// The endpoint as an HTTP/2 request names it, and where its connection goes.
    struct Target: Sendable {
        var host: String
        var port: Int
        var authority: String
        var path: String

        init?(_ endpoint: String) {
            guard let components = URLComponents(string: endpoint), components.scheme?.lowercased() == "https",
                let host = components.host, !host.isEmpty, let authority = components.percentEncodedHost
            else { return nil }
            self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
            port = components.port ?? 443
            self.authority = components.port.map { "\(authority):\($0)" } ?? authority
            let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
            self.path = components.percentEncodedQuery.map { "\(path)?\($0)" } ?? path
        }
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
            checkedOrigin: Result { () throws(EgressRefusal) in try policy.check(url: subscription.endpoint) },
            encryption: Result { () throws(WebPushEncryption.InvalidKey) in
                try WebPushEncryption(p256dh: subscription.p256dh, auth: subscription.auth)
            },
            target: Target(subscription.endpoint)
        )
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[token] = entry
        }
        return entry
    }
}
