/// How a route authenticates: not at all, a shared service token, or a user's bearer JWT.
/// Configuration only: the app host checks what a request presents (`RouteAuthenticator`).
public enum RouteAuthentication: Sendable, Equatable {
    case none
    /// A backend's shared secret, compared in constant time.
    case token(String)
    /// HS256 JWT signed with `secret`; the user is the value of `userClaim`.
    case jwt(secret: String, userClaim: String)

    /// HS256 needs a key at least as long as its 32-byte digest (RFC 7518 §3.2). Validation
    /// rejects shorter secrets; one that still gets here (an unset variable in a dry run) is
    /// replaced by a random key, so no token verifies instead of any token verifying.
    public static let minimumSecretBytes = 32
}
