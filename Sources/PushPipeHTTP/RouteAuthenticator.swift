import Crypto
import Foundation
import JWTKit
import PushPipeCore
import Synchronization

/// Checks the credentials a request presents against its route's `RouteAuthentication`. One
/// per app host: the HS256 key of each secret is made once and kept.
final class RouteAuthenticator: Sendable {
    private let keyCollections = Mutex<[SecretBytes: JWTKeyCollection]>([:])
    private let identities: IdentityVerifier

    init(identityLookup: (any IdentityLookup)? = nil) {
        identities = IdentityVerifier(lookup: identityLookup)
    }

    /// Returns the authenticated user (for `jwt` and `identity`), or throws 401 (an identity
    /// URL that does not answer: 503, or 502).
    func authenticate(_ authentication: RouteAuthentication, authorization: String?) async throws -> String? {
        switch authentication {
        case .none:
            return nil
        case .token(let expected):
            guard let presented = Self.bearer(authorization), !expected.isEmpty, Self.constantTimeEquals(presented.utf8, expected.utf8)
            else { throw RouteError.unauthorized() }
            return nil
        case .jwt(let secret, let userClaim):
            guard let token = Self.bearer(authorization) else { throw RouteError.unauthorized() }
            let keys = await keys(for: secret)
            let claims: UserClaims
            do {
                claims = try await keys.verify(token, as: UserClaims.self)
            } catch {
                throw RouteError.unauthorized("invalid bearer token")
            }
            guard let user = claims.claims[userClaim]?.textValue, !user.isEmpty else {
                throw RouteError.unauthorized("bearer token has no '\(userClaim)' claim")
            }
            return user
        case .identity(let check):
            return try await identities.user(check, authorization: authorization)
        }
    }

    /// Who an authenticated request is, for scoping what it stores and may read back (event
    /// records, idempotency keys): the JWT's user; on a token route, the credential itself, as
    /// the start of its token's digest, so a second source of the same pipeline with a token
    /// of its own reads none of the first one's events.
    static func principal(_ authentication: RouteAuthentication, user: String?) -> String {
        switch authentication {
        case .none: ""
        case .token(let token): tokenPrincipal(token)
        case .jwt, .identity: "user:" + (user ?? "")
        }
    }

    /// A configured token's principal, hashed once per token rather than at every request.
    /// Only configured tokens come here, never a caller's: the table holds a few, and starts
    /// over past a bound (reloads that changed tokens many times).
    private static func tokenPrincipal(_ token: String) -> String {
        let key = SecretBytes(token)
        if let known = tokenPrincipals.withLock({ $0[key] }) { return known }
        let principal = "token:" + hex(SHA256.hash(data: Array(token.utf8)).prefix(8))
        tokenPrincipals.withLock { known in
            if known.count >= 256 { known.removeAll() }
            known[key] = principal
        }
        return principal
    }

    private static let tokenPrincipals = Mutex<[SecretBytes: String]>([:])

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The credential of an `Authorization: Bearer …` header (the scheme in any case), without
    /// the white space around it. An ASCII header (every real one) is read byte by byte: every
    /// request to a token route comes here.
    static func bearer(_ header: String?) -> String? {
        guard var header else { return nil }
        guard header.utf8.allSatisfy({ $0 < 0x80 }) else {
            // Beyond ASCII, by characters and Foundation's white space, as it always was.
            guard header.lowercased().hasPrefix("bearer ") else { return nil }
            let value = header.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
            return value.isEmpty ? nil : value
        }
        return header.withUTF8 { bytes -> String? in
            let scheme = "bearer ".utf8
            guard bytes.count > scheme.count, bytes[6] == UInt8(ascii: " "),
                zip(bytes.prefix(6), scheme.prefix(6)).allSatisfy({ $0 | 0x20 == $1 })
            else { return nil }
            // Foundation's white space, in ASCII: the space and the tab.
            let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
            var start = scheme.count
            var end = bytes.count
            while start < end, isSpace(bytes[start]) { start += 1 }
            while end > start, isSpace(bytes[end - 1]) { end -= 1 }
            return start == end ? nil : String(decoding: bytes[start..<end], as: UTF8.self)
        }
    }

    /// Whether two credentials are equal, in a time that does not depend on where they differ.
    static func constantTimeEquals(_ left: String.UTF8View, _ right: String.UTF8View) -> Bool {
        guard left.count == right.count else { return false }
        return zip(left, right).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    private func keys(for secret: String) async -> JWTKeyCollection {
        let secretKey = SecretBytes(secret)
        if let keys = keyCollections.withLock({ $0[secretKey] }) { return keys }
        let keys = JWTKeyCollection()
        let key = secret.utf8.count >= RouteAuthentication.minimumSecretBytes ? HMACKey(from: secret) : HMACKey(key: SymmetricKey(size: .bits256))
        await keys.add(hmac: key, digestAlgorithm: .sha256)
        // Two first requests may both make one: either serves, the first kept stays.
        return keyCollections.withLock { collections in
            if let kept = collections[secretKey] { return kept }
            collections[secretKey] = keys
            return keys
        }
    }
}

/// A secret as a table key, equal to another only byte for byte: `String` equality is
/// canonical equivalence, under which two configured secrets that differ in bytes (`é` and
/// `e` + U+0301, or a Kelvin sign and `K`) would share one principal or one HMAC key.
private struct SecretBytes: Hashable {
    let text: String

    init(_ text: String) { self.text = text }

    static func == (left: SecretBytes, right: SecretBytes) -> Bool { left.text.utf8.elementsEqual(right.text.utf8) }

    func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

/// Any claims; `exp` and `nbf` are checked when present.
struct UserClaims: JWTPayload {
    var claims: [String: JSON]

    init(from decoder: any Decoder) throws {
        claims = try [String: JSON](from: decoder)
    }

    func encode(to encoder: any Encoder) throws { try claims.encode(to: encoder) }

    func verify(using algorithm: some JWTAlgorithm) async throws {
        let now = Date().timeIntervalSince1970
        if let expiry = claims["exp"]?.doubleValue, expiry < now { throw JWTError.claimVerificationFailure(failedClaim: nil, reason: "expired") }
        if let notBefore = claims["nbf"]?.doubleValue, notBefore > now + 60 {
            throw JWTError.claimVerificationFailure(failedClaim: nil, reason: "not yet valid")
        }
    }
}
