import Foundation
import JWTKit
import PushPipe
import Synchronization

/// The ES256 provider token APNs authenticates us with.
///
/// APNs rejects an `iat` older than an hour and a new token more often than every 20
/// minutes per connection (429 TooManyProviderTokenUpdates), so one token is reused for
/// `lifetime` (50 minutes) and never signed per request. APNs saying
/// `ExpiredProviderToken` forces a new one, at most once a minute.
public final class APNsProviderToken: Sendable {
    public let keyID: String
    public let teamID: String
    let lifetime: TimeInterval
    let now: @Sendable () -> Date
    private let signer: JWTKeyCollection
    private let cached = Mutex<(token: String, issuedAt: Date)?>(nil)
    private let forcedRefreshAt = Mutex<Date?>(nil)

    struct Claims: JWTPayload {
        var iss: String
        /// Whole UNIX seconds, a JSON number: what APNs expects.
        var iat: Int
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// - Parameter pem: the contents of the `.p8` file (PKCS#8 P-256 private key).
    public init(pem: String, keyID: String, teamID: String, lifetime: TimeInterval = 50 * 60,
                now: @escaping @Sendable () -> Date = Date.init) async throws {
        self.keyID = keyID
        self.teamID = teamID
        self.lifetime = lifetime
        self.now = now
        signer = JWTKeyCollection()
        await signer.add(ecdsa: try ES256PrivateKey(pem: pem), kid: JWKIdentifier(string: keyID))
    }

    /// The current token, signing a new one only when the cached one is too old.
    public func token() async throws -> String {
        let current = now()
        if let cached = cached.withLock({ $0 }), current.timeIntervalSince(cached.issuedAt) < lifetime {
            return cached.token
        }
        let claims = Claims(iss: teamID, iat: Int(current.timeIntervalSince1970))
        let token = try await signer.sign(claims, kid: JWKIdentifier(string: keyID))
        cached.withLock { $0 = (token, current) }
        return token
    }

    /// Drops the cached token after APNs called it expired. Returns false (and keeps the
    /// token) when a forced refresh already happened within the last minute.
    @discardableResult
    public func invalidate() -> Bool {
        let current = now()
        let allowed = forcedRefreshAt.withLock { last -> Bool in
            if let last, current.timeIntervalSince(last) < 60 { return false }
            last = current
            return true
        }
        if allowed { cached.withLock { $0 = nil } }
        return allowed
    }

    /// When the cached token was signed (for tests and diagnostics).
    public var issuedAt: Date? { cached.withLock { $0?.issuedAt } }
}
