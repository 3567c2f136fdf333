import AsyncHTTPClient
import Foundation
import JWTKit
import NIOCore
import NIOFoundationCompat
import PushPipeCore
import Synchronization

/// OAuth2 access tokens for FCM from a service account (JWT-bearer grant, RS256).
///
/// The token is cached until shortly before `expires_in`; concurrent sends that find it
/// missing or stale wait for one shared refresh instead of each asking Google.
final class GoogleAccessToken: Sendable {
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    let account: GoogleServiceAccount
    let client: HTTPClient
    private let signer: JWTKeyCollection
    private let state = Mutex(State())
    /// How many token requests were made (tests check sharing and refreshes).
    var requests: Int { state.withLock { $0.requests } }

    struct State {
        var token: String?
        var expires = ContinuousClock.now
        var refreshing = false
        /// Followers of a refresh in progress: resumed with its token.
        var waiters: [CheckedContinuation<String?, any Error>] = []
        var requests = 0
    }

    struct Assertion: JWTPayload {
        var iss: String
        var scope: String
        var aud: String
        var iat: Int
        var exp: Int
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    init(account: GoogleServiceAccount, client: HTTPClient) async throws {
        self.account = account
        self.client = client
        signer = JWTKeyCollection()
        let key = try Insecure.RSA.PrivateKey(pem: account.privateKeyPEM)
        await signer.add(rsa: key, digestAlgorithm: .sha256, kid: account.privateKeyID.map { JWKIdentifier(string: $0) })
    }

    /// The cached token, or the result of the refresh in progress, or a new refresh.
    func token() async throws -> String {
        let cached = state.withLock { state -> String? in
            guard let token = state.token, state.expires > .now else { return nil }
            return token
        }
        if let cached { return cached }
        return try await refreshShared()
    }

    /// After a 401 without an FCM error code: forget the token so the next send gets a new one.
    func invalidate(_ token: String) {
        state.withLock { state in if state.token == token { state.token = nil } }
    }

    /// The first caller refreshes (its continuation is resumed with nil at once); the others
    /// wait and are resumed with the token it got.
    private func refreshShared() async throws -> String {
        let leads = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String?, any Error>) in
            let isLeader = state.withLock { state -> Bool in
                if state.refreshing {
                    state.waiters.append(continuation)
                    return false
                }
                state.refreshing = true
                return true
            }
            if isLeader { continuation.resume(returning: nil) }
        }
        if let token = leads { return token }
        do {
            let (token, lifetime) = try await requestToken()
            let waiters = state.withLock { state -> [CheckedContinuation<String?, any Error>] in
                state.token = token
                // Refresh a minute early: a token must not expire on its way to FCM.
                state.expires = .now + .seconds(max(0, lifetime - 60))
                state.refreshing = false
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: token) }
            return token
        } catch {
            let waiters = state.withLock { state -> [CheckedContinuation<String?, any Error>] in
                state.refreshing = false
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(throwing: error) }
            throw error
        }
    }

    private func requestToken() async throws -> (String, Int) {
        state.withLock { $0.requests += 1 }
        let now = Int(Date().timeIntervalSince1970)
        let assertion = try await signer.sign(
            Assertion(iss: account.clientEmail, scope: Self.scope, aud: account.tokenURI, iat: now, exp: now + 3600),
            kid: account.privateKeyID.map { JWKIdentifier(string: $0) }
        )
        var request = HTTPClientRequest(url: account.tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        request.body = .bytes(ByteBuffer(string: form))
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        let json = try? JSON.parse(body.readableBytesView)
        guard response.status.code == 200, let token = json?["access_token"]?.stringValue else {
            // The error fields, never the request (which holds the signed assertion).
            let reason = json?["error_description"]?.stringValue ?? json?["error"]?.stringValue ?? "HTTP \(response.status.code)"
            throw StageError(.unavailable, stage: "transport", "Google OAuth token request failed: \(reason)")
        }
        return (token, Int(json?["expires_in"]?.intValue ?? 3600))
    }
}
