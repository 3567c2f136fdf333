import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import PushPipeCore

/// Who may read the admin listener. `/tap` streams whole event bodies and rendered payloads,
/// and the status page and metrics name pipelines, users' counts and reasons: with a token set
/// (`--admin-token`, `PUSHPIPE_ADMIN_TOKEN`) they need it as a bearer token. On loopback without
/// a token they stay open, as a developer expects, but only to requests that name this machine
/// in their `Host`: a web page whose domain was rebound to 127.0.0.1 names its own domain.
public struct AdminAccess: Sendable {
    /// The bearer token operators present; nil: none is asked for.
    let token: String?
    /// `/metrics` open to a scraper even with a token set.
    let metricsPublic: Bool
    /// Taps streaming at once; the next one is refused with 429.
    let maximumTaps: Int

    public init(token: String?, metricsPublic: Bool = false, maximumTaps: Int = 8) {
        self.token = token.flatMap { $0.isEmpty ? nil : $0 }
        self.metricsPublic = metricsPublic
        self.maximumTaps = maximumTaps
    }

    /// Refuses a listener that anyone on the network could read: a non-loopback address needs a token.
    public func checkBinding(host: String) throws {
        guard token == nil, !Self.isLoopback(host) else { return }
        throw AdminExposedError(host: host)
    }

    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? Substring(host.dropFirst().dropLast()) : Substring(host)
        return isLoopbackName(bare)
    }

    /// `localhost`, `::1`, or an IPv4 literal in 127/8 read as an address: a name that merely
    /// starts with `127.` (`127.0.0.1.attacker.example`) is somebody else's domain.
    static func isLoopbackName(_ host: Substring) -> Bool {
        if host.lowercased() == "localhost" || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy { $0.isASCII && $0.isNumber } && Int(part)! <= 255
        }
    }

    /// The answer for a request this access does not admit, or nil to serve it.
    func refusal(_ request: Request, listenerHost: String) -> Response? {
        if Self.isLoopback(listenerHost), !Self.namesThisMachine(request.head.authority) {
            return HTTPHost.response(
                status: 403,
                body: RouteError(
                    403,
                    "the admin listener answers requests for localhost only (Host: \(request.head.authority ?? "none"))",
                    field: "host"
                ).body
            )
        }
        guard needsToken(request.uri.path), !isAuthorized(request) else { return nil }
        var response = HTTPHost.response(
            status: 401,
            body: RouteError(
                401,
                "the admin listener needs its token: Authorization: Bearer <--admin-token>",
                field: "authorization"
            ).body
        )
        response.headers[.wwwAuthenticate] = "Bearer realm=\"pushpipe-admin\""
        return response
    }

    /// Health stays open (a load balancer has no token); readiness tells its reasons only to
    /// those who may read the rest.
    func needsToken(_ path: String) -> Bool {
        guard token != nil else { return false }
        switch path {
        case "/healthz", "/readyz": return false
        case "/metrics": return !metricsPublic
        default: return true
        }
    }

    func isAuthorized(_ request: Request) -> Bool {
        guard let token else { return true }
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else { return false }
        // Compared as digests, in constant time: the answer's timing tells nothing of the token.
        return SHA256.hash(data: Data(header.dropFirst(7).utf8)) == SHA256.hash(data: Data(token.utf8))
    }

    static func namesThisMachine(_ authority: String?) -> Bool {
        guard let authority, !authority.isEmpty else { return false }
        var host = Substring(authority)
        if host.hasPrefix("[") {
            // `[::1]` alone or with a port: nothing else may follow the bracket.
            guard let close = host.firstIndex(of: "]") else { return false }
            let rest = host[host.index(after: close)...]
            guard rest.isEmpty || (rest.first == ":" && rest.dropFirst().allSatisfy { $0.isASCII && $0.isNumber }) else { return false }
            return host[host.index(after: host.startIndex)..<close] == "::1"
        }
        if let colon = host.lastIndex(of: ":") {
            guard host[host.index(after: colon)...].allSatisfy({ $0.isASCII && $0.isNumber }) else { return false }
            host = host[..<colon]
        }
        return isLoopbackName(host)
    }
}

/// `--admin-listen` on an address others can reach, with nothing to keep them out.
public struct AdminExposedError: Error, CustomStringConvertible {
    public let host: String
    public var description: String {
        "the admin listener would serve \(host) without a token: its tap streams event bodies. Set --admin-token (or PUSHPIPE_ADMIN_TOKEN), "
            + "or listen on loopback (--admin-listen 127.0.0.1:9090), or turn it off (--admin-listen off)"
    }
}
