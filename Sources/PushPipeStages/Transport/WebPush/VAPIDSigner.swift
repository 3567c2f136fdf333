import Crypto
import Foundation
import PushPipeCore
import Synchronization

/// RFC 8292 VAPID: the application server's identity, an ES256 JWT per push service origin
/// (`aud`), sent as `Authorization: vapid t=<JWT>, k=<public key>`.
///
/// A token is valid for at most 24 hours; one is signed per origin for `lifetime` and reused,
/// so a send costs no signature (the ECDH of the encryption is cost enough).
final class VAPIDSigner: Sendable {
    let key: P256.Signing.PrivateKey
    /// `mailto:` or `https:`: whom the push service contacts about our traffic.
    let subject: String
    let lifetime: Duration
    let now: @Sendable () -> Date
    /// `k=`: the uncompressed public key, base64url; the `applicationServerKey` of the page.
    let publicKeyText: String
    private let tokens = Mutex<[String: (header: String, expires: Date)]>([:])

    init(key: P256.Signing.PrivateKey, subject: String, lifetime: Duration = .seconds(12 * 3600), now: @escaping @Sendable () -> Date = Date.init) {
        self.key = key
        self.subject = subject
        self.lifetime = min(lifetime, .seconds(24 * 3600))
        self.now = now
        publicKeyText = VAPIDKeyFile.applicationServerKey(key)
    }

    /// The origin of an endpoint (`https://host[:port]`), which the token's `aud` must be.
    static func origin(of endpoint: URL) -> String? {
        guard let scheme = endpoint.scheme, let host = endpoint.host else { return nil }
        return endpoint.port.map { "\(scheme)://\(host):\($0)" } ?? "\(scheme)://\(host)"
    }

    /// The `Authorization` header for a push service origin, signed again an hour before the
    /// current token expires.
    func authorization(for origin: String) throws -> String {
        let current = now()
        if let cached = tokens.withLock({ $0[origin] }), cached.expires.timeIntervalSince(current) > 3600 { return cached.header }
        let expires = current.addingTimeInterval(lifetime.inSeconds)
        let header = "vapid t=\(try token(audience: origin, expires: expires)), k=\(publicKeyText)"
        tokens.withLock { $0[origin] = (header, expires) }
        return header
    }

    func token(audience: String, expires: Date) throws -> String {
        let header = Data(#"{"typ":"JWT","alg":"ES256"}"#.utf8).base64URLEncodedString()
        let claims: JSON = ["aud": .string(audience), "exp": .int(Int64(expires.timeIntervalSince1970)), "sub": .string(subject)]
        let signingInput = header + "." + Data(claims.compactText.utf8).base64URLEncodedString()
        let signature = try key.signature(for: Data(signingInput.utf8))
        return signingInput + "." + signature.rawRepresentation.base64URLEncodedString()
    }
}
