import Crypto
import Foundation
import PushPipeCore
import Synchronization

/// Finds whose a bearer credential is for `auth: {type: identity}` routes, by asking the
/// route's identity URL (`IdentityLookup`), and keeps positive answers for `cache`: an app
/// registers at every launch, and the identity service need not hear of each. Credentials are
/// kept only as digests; at most `capacity` of them, past that the cache starts over.
final class IdentityVerifier: Sendable {
    private struct Entry {
        var user: String
        var expires: ContinuousClock.Instant
    }

    private let lookup: (any IdentityLookup)?
    private let cache = Mutex<[String: Entry]>([:])
    static let capacity = 10_000

    init(lookup: (any IdentityLookup)?) {
        self.lookup = lookup
    }

    /// The user the credential belongs to, or a refusal: 401 without a bearer credential or
    /// when the URL refuses it, 503 when the URL does not answer in time, throttles (429) or is
    /// not set up, 502 when it answers anything else that names nobody.
    func user(_ check: IdentityCheck, authorization: String?) async throws(RouteError) -> String {
        guard let credential = RouteAuthenticator.bearer(authorization) else { throw RouteError.unauthorized() }
        let key = Self.key(check, credential)
        let now = ContinuousClock.now
        if let entry = cache.withLock({ $0[key] }), entry.expires > now { return entry.user }
        guard let lookup, !check.url.isEmpty else {
            throw RouteError(503, "the identity check of this route is not set up (auth.url)", field: "authorization", retryAfter: 5)
        }
        let answer: IdentityAnswer
        do {
            answer = try await lookup.ask(check, authorization: "Bearer \(credential)")
        } catch {
            switch error {
            case .timedOut:
                throw RouteError(503, "the identity check did not answer within \(check.timeout); try again", field: "authorization", retryAfter: 5)
            case .failed(let reason):
                throw RouteError(503, "the identity check could not be asked (\(reason)); try again", field: "authorization", retryAfter: 5)
            }
        }
        let user = try Self.user(in: answer, check)
        if check.cacheLifetime > .zero {
            cache.withLock { cache in
                if cache.count >= Self.capacity { cache.removeAll() }
                cache[key] = Entry(user: user, expires: now + check.cacheLifetime)
            }
        }
        return user
    }

    /// The user a 2xx JSON answer names at `idField` (a non-empty string or an integer).
    static func user(in answer: IdentityAnswer, _ check: IdentityCheck) throws(RouteError) -> String {
        switch answer.status {
        case 200..<300: break
        case 401, 403: throw RouteError.unauthorized("the identity check refused the credential (HTTP \(answer.status))")
        case 429: throw RouteError(503, "the identity check is throttled (HTTP 429); try again", field: "authorization", retryAfter: 5)
        default: throw RouteError(502, "the identity check answered HTTP \(answer.status)", field: "authorization")
        }
        switch (try? JSON.parse(Data(answer.body)))?.value(at: check.idField) {
        case .string(let id) where !id.isEmpty && id.count <= 256: return id
        case .int(let id): return String(id)
        default: throw RouteError(502, "the identity check's answer names no user at '\(check.idField)'", field: "authorization")
        }
    }

    /// The route's URL and the credential's digest: the same credential may be someone else's
    /// at another identity URL.
    private static func key(_ check: IdentityCheck, _ credential: String) -> String {
        check.url + "\u{0}" + check.idField + "\u{0}" + RouteAuthenticator.hex(SHA256.hash(data: Array(credential.utf8)))
    }
}
