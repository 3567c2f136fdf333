import Foundation
import JWTKit
import PushPipeCore
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
    let lifetime: Duration
    let now: @Sendable () -> Date
    private let signer: JWTKeyCollection
    private let cached = Mutex<Cached?>(nil)

    /// A token, or the one signing every waiter shares: two tokens signed at once are two
    /// different tokens (ECDSA signatures are randomized), and APNs answers a connection that
    /// switches between them with TooManyProviderTokenUpdates.
    private enum Cached {
        case signed(token: String, issuedAt: Date)
        case signing(Task<(token: String, issuedAt: Date), any Error>)
    }
    private let forcedRefreshAt = Mutex<Date?>(nil)

    struct Claims: JWTPayload {
        var iss: String
        /// Whole UNIX seconds, a JSON number: what APNs expects.
        var iat: Int
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// - Parameter pem: the contents of the `.p8` file (PKCS#8 P-256 private key).
    public init(
        pem: String,
        keyID: String,
        teamID: String,
        lifetime: Duration = .seconds(50 * 60),
        now: @escaping @Sendable () -> Date = Date.init
    ) async throws {
        self.keyID = keyID
        self.teamID = teamID
        self.lifetime = lifetime
        self.now = now
        signer = JWTKeyCollection()
        await signer.add(ecdsa: try ES256PrivateKey(pem: pem), kid: JWKIdentifier(string: keyID))
    }

    /// The current token, signing a new one only when the cached one is too old; callers
    /// arriving while it is signed wait for that one.
    public func token() async throws -> String {
        let current = now()
        let signing = cached.withLock { cached -> Task<(token: String, issuedAt: Date), any Error>? in
            switch cached {
            case .signed(_, let issuedAt) where current.timeIntervalSince(issuedAt) < lifetime.inSeconds:
                return nil
            case .signing(let task):
                return task
            default:
                let task = Task { [signer, keyID, teamID] in
                    let claims = Claims(iss: teamID, iat: Int(current.timeIntervalSince1970))
                    return (token: try await signer.sign(claims, kid: JWKIdentifier(string: keyID)), issuedAt: current)
                }
                cached = .signing(task)
                return task
            }
        }
        guard let signing else {
            if case .signed(let token, _) = cached.withLock({ $0 }) { return token }
            return try await token()
        }
        do {
            let signed = try await signing.value
            cached.withLock { cached in
                if case .signing(let task) = cached, task == signing { cached = .signed(token: signed.token, issuedAt: signed.issuedAt) }
            }
            return signed.token
        } catch {
            cached.withLock { cached in
                if case .signing(let task) = cached, task == signing { cached = nil }
            }
            throw error
        }
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
        if allowed {
            cached.withLock { cached in
                // A token being signed now is a new one already.
                if case .signed = cached { cached = nil }
            }
        }
        return allowed
    }

    /// When the cached token was signed (for tests and diagnostics).
    public var issuedAt: Date? {
        cached.withLock { cached in
            if case .signed(_, let issuedAt) = cached { return issuedAt }
            return nil
        }
    }
}
