/// Asks an identity URL (`IdentityCheck`) about a caller's credential. The app host calls it
/// and the composition root provides it (PushPipeStages' `HTTPIdentityLookup`), so neither the
/// core nor the host names an HTTP client or a provider.
public protocol IdentityLookup: Sendable {
    /// `GET url` with `authorization` as the `Authorization` header, redirects not followed,
    /// within `check.timeout` for the whole exchange, at most `IdentityAnswer.bodyLimit` bytes
    /// of the body read.
    func ask(_ check: IdentityCheck, authorization: String) async throws(IdentityLookupFailure) -> IdentityAnswer
}

/// What the identity URL answered.
public struct IdentityAnswer: Sendable, Equatable {
    public var status: Int
    /// The start of the body: an identity answer is small, anything longer is not one.
    public var body: [UInt8]

    public static let bodyLimit = 64 * 1024

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }
}

/// Why the identity URL gave no answer at all.
public enum IdentityLookupFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nothing within the check's `timeout`.
    case timedOut
    /// Refused, unreachable, a TLS failure, a redirect (which is not followed): the reason, short.
    case failed(String)

    public var description: String {
        switch self {
        case .timedOut: "no answer in time"
        case .failed(let reason): reason
        }
    }
}
