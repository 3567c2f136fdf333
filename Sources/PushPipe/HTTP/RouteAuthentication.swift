import Crypto
import Foundation
import JWTKit

/// How a route authenticates: not at all, a shared service token, or a user's bearer JWT.
public enum RouteAuthentication: Sendable {
    case none
    /// A backend's shared secret, compared in constant time.
    case token(String)
    /// HS256 JWT signed with `secret`; the user is the value of `userClaim`.
    case jwt(keys: JWTKeyCollection, userClaim: String)

    /// HS256 needs a key at least as long as its 32-byte digest (RFC 7518 §3.2). Validation
    /// rejects shorter secrets; one that still gets here (an unset variable in a dry run) is
    /// replaced by a random key, so no token verifies instead of any token verifying.
    public static let minimumSecretBytes = 32

    public static func jwt(secret: String, userClaim: String) async -> RouteAuthentication {
        let keys = JWTKeyCollection()
        let key = secret.utf8.count >= minimumSecretBytes ? HMACKey(from: secret) : HMACKey(key: SymmetricKey(size: .bits256))
        await keys.add(hmac: key, digestAlgorithm: .sha256)
        return .jwt(keys: keys, userClaim: userClaim)
    }

    /// Returns the authenticated user (for `jwt`), or throws 401.
    func authenticate(authorization: String?) async throws -> String? {
        switch self {
        case .none:
            return nil
        case .token(let expected):
            guard let presented = Self.bearer(authorization), !expected.isEmpty,
                  Self.constantTimeEquals(Array(presented.utf8), Array(expected.utf8)) else { throw HTTPError.unauthorized() }
            return nil
        case .jwt(let keys, let userClaim):
            guard let token = Self.bearer(authorization) else { throw HTTPError.unauthorized() }
            let claims: UserClaims
            do {
                claims = try await keys.verify(token, as: UserClaims.self)
            } catch {
                throw HTTPError.unauthorized("invalid bearer token")
            }
            guard let user = claims.claims[userClaim]?.textValue, !user.isEmpty else {
                throw HTTPError.unauthorized("bearer token has no '\(userClaim)' claim")
            }
            return user
        }
    }

    static func bearer(_ header: String?) -> String? {
        guard let header, header.lowercased().hasPrefix("bearer ") else { return nil }
        let value = header.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
        return value.isEmpty ? nil : value
    }

    static func constantTimeEquals(_ left: [UInt8], _ right: [UInt8]) -> Bool {
        guard left.count == right.count else { return false }
        return zip(left, right).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
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
