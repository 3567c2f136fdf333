import Foundation
import PushPipeCore

/// OGS's `GET /api/v1/me`: who the caller's bearer token belongs to, as routes with
/// `auth: {type: identity}` ask it. Tests name each token's player and make the endpoint fail
/// (5xx, garbage, hanging) to see what a route does when its identity check does.
extension OGSStandIn {
    /// `Authorization: Bearer <token>` now answers as `player`.
    public func identify(_ token: String, as player: Int64) {
        state.update { $0.identities[token] = player }
    }

    /// How `/api/v1/me` answers from now on: `.malformed` sends garbage, `.delayed` holds the
    /// answer (a long delay: a service that hangs), `.status` an error.
    public func behaveForIdentity(_ behavior: Behavior) {
        state.update { $0.identityBehavior = behavior }
    }

    /// How many times `/api/v1/me` was asked.
    public var identityRequests: Int { state.value.identityRequests }

    func answerIdentity(authorization: String?) -> (status: Int, headers: [(String, String)], body: String, delay: Duration) {
        let token = authorization.flatMap { $0.lowercased().hasPrefix("bearer ") ? String($0.dropFirst(7)) : nil }
        let (player, behavior) = state.update { state -> (Int64?, Behavior) in
            state.identityRequests += 1
            return (token.flatMap { state.identities[$0] }, state.identityBehavior)
        }
        switch behavior {
        case .status(let code, let retryAfter):
            return (code, retryAfter.map { [("retry-after", String($0))] } ?? [], #"{"detail": "Server error."}"#, .zero)
        case .throttled(let retryAfter):
            return (429, [("retry-after", retryAfter)], #"{"detail": "Request was throttled."}"#, .zero)
        case .malformed:
            return (200, [], "<html>not json", .zero)
        case .delayed(let delay):
            return (200, [], Self.identity(player ?? 0).compactText, delay)
        case .normal:
            guard let player else { return (401, [], #"{"detail": "Authentication credentials were not provided."}"#, .zero) }
            return (200, [], Self.identity(player).compactText, .zero)
        }
    }

    /// The start of OGS's own answer: the player's id and name, among much else.
    static func identity(_ player: Int64) -> JSON {
        ["id": .int(player), "username": .string("player\(player)"), "ranking": 28.5, "is_superuser": false, "anonymous": false]
    }
}
