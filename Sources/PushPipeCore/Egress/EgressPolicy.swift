import Foundation

/// Where a request may go when a user or an event chose its URL (a browser's Web Push
/// endpoint today): never into the operator's own network. One policy for every such request,
/// so a new stage that posts to a URL it was handed cannot forget a rule.
///
/// - https only, and no redirects (a redirect is a second URL nobody checked);
/// - no loopback, private, link-local, shared, unique-local, multicast or reserved address,
///   checked on the addresses the name resolves to and again on the connection's peer;
/// - when `allowedOrigins` is not empty, only those origins (`https://*.push.apple.com`);
/// - `privateOrigins` are exempt from the address rule: a stand-in on 127.0.0.1 in tests, an
///   internal push gateway (`--allow-private-endpoint ORIGIN`).
public struct EgressPolicy: Sendable, Equatable {
    /// Origins (`https://host[:port]`) allowed although they resolve to a private address.
    public var privateOrigins: Set<String>
    /// Origin patterns a request may go to; empty: any public origin.
    public var allowedOrigins: [String]

    public static let standard = EgressPolicy()

    public init(privateOrigins: [String] = [], allowedOrigins: [String] = []) {
        self.privateOrigins = Set(privateOrigins.compactMap { Self.origin(of: $0) })
        self.allowedOrigins = allowedOrigins.map { $0.lowercased() }
    }

    /// The same policy with the origins of a stage's own allow-list.
    public func allowing(origins patterns: [String]) -> EgressPolicy {
        var policy = self
        policy.allowedOrigins = patterns.map { $0.lowercased() }
        return policy
    }

    /// Checks a URL before anything is resolved or sent; returns its origin.
    public func check(url text: String) throws(EgressRefusal) -> String {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else { throw EgressRefusal(.notHTTPS, origin: "", "not a URL") }
        guard scheme == "https" else { throw EgressRefusal(.notHTTPS, origin: scheme, "only https is allowed") }
        guard let origin = Self.origin(of: text), let host = url.host, !host.isEmpty else { throw EgressRefusal(.notHTTPS, origin: "", "no host") }
        guard url.user == nil, url.password == nil else { throw EgressRefusal(.notHTTPS, origin: origin, "credentials in the URL") }
        if !allowedOrigins.isEmpty, !allowedOrigins.contains(where: { Self.origin(origin, matches: $0) }) {
            throw EgressRefusal(.originNotAllowed, origin: origin, "not one of the allowed push-service origins")
        }
        if privateOrigins.contains(origin) { return origin }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare.lowercased() == "localhost" || bare.lowercased().hasSuffix(".localhost") {
            throw EgressRefusal(.privateAddress, origin: origin, "localhost")
        }
        if let address = IPAddressBytes(bare), !address.isPublic {
            throw EgressRefusal(.privateAddress, origin: origin, "a private or reserved address")
        }
        return origin
    }

    /// Whether a resolved or connected address may be used for `origin`.
    public func permits(_ address: IPAddressBytes, origin: String) -> Bool {
        address.isPublic || privateOrigins.contains(origin)
    }

    /// `https://host[:port]`, lowercased, the default port left out; nil for no URL.
    public static func origin(of text: String) -> String? {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty
        else { return nil }
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        if let port = components.port, !(scheme == "https" && port == 443) && !(scheme == "http" && port == 80) {
            return "\(scheme)://\(bracketed):\(port)"
        }
        return "\(scheme)://\(bracketed)"
    }

    /// `https://*.push.apple.com` matches `https://api.push.apple.com`, not `https://push.apple.com.evil`.
    static func origin(_ origin: String, matches pattern: String) -> Bool {
        guard let star = pattern.range(of: "://*.") else { return origin == pattern }
        let scheme = pattern[..<star.lowerBound]
        let suffix = "." + pattern[star.upperBound...]
        guard origin.hasPrefix(scheme + "://") else { return false }
        let host = origin.dropFirst(scheme.count + 3)
        return host.hasSuffix(suffix) && host.count > suffix.count
    }
}

/// Why a request to a URL a user chose was not sent.
public struct EgressRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case notHTTPS = "not-https"
        case privateAddress = "private-address"
        case originNotAllowed = "origin-not-allowed"
        case redirect = "redirect"
        case unresolvable = "unresolvable"
    }

    public var code: Code
    public var origin: String
    public var detail: String

    public init(_ code: Code, origin: String, _ detail: String) {
        self.code = code
        self.origin = origin
        self.detail = detail
    }

    public var description: String { "egress refused (\(code.rawValue)) \(origin): \(detail)" }
}
