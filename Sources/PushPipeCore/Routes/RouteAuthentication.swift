/// How a route authenticates: not at all, a shared service token, a user's bearer JWT, or a
/// user's bearer credential an identity URL vouches for. Configuration only: the app host
/// checks what a request presents (`RouteAuthenticator`).
public enum RouteAuthentication: Sendable, Equatable {
    case none
    /// A backend's shared secret, compared in constant time.
    case token(String)
    /// HS256 JWT signed with `secret`; the user is the value of `userClaim`.
    case jwt(secret: String, userClaim: String)
    /// Any bearer credential; the user is whom `IdentityCheck.url` says it belongs to, and a
    /// user route acts only for that user (403 for another).
    case identity(IdentityCheck)

    /// HS256 needs a key at least as long as its 32-byte digest (RFC 7518 §3.2). Validation
    /// rejects shorter secrets; one that still gets here (an unset variable in a dry run) is
    /// replaced by a random key, so no token verifies instead of any token verifying.
    public static let minimumSecretBytes = 32
}
