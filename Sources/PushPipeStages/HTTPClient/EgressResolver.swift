import Foundation
import NIOPosix
import PushPipeCore
import Synchronization

/// Resolves the names of URLs users chose, so their addresses are checked before a connection
/// is made (`EgressHTTPClient`). Answers are kept for `lifetime`: a push service is asked
/// about once per half minute, not once per message; the connection's peer is checked again
/// anyway, so a name that changes its answer in between gains nothing.
final class EgressResolver: Sendable {
    static let shared = EgressResolver()
    private let lifetime: Duration = .seconds(30)
    private let answers = Mutex<[String: (addresses: [IPAddressBytes], until: ContinuousClock.Instant)]>([:])

    func addresses(of host: String, port: Int, origin: String) async throws -> [IPAddressBytes] {
        if let literal = IPAddressBytes(host) { return [literal] }
        let key = "\(host):\(port)"
        let now = ContinuousClock.now
        if let kept = answers.withLock({ $0[key] }), kept.until > now { return kept.addresses }
        let resolved = try await NIOThreadPool.singleton.runIfActive { Self.getaddrinfo(host, port: port) }
        guard !resolved.isEmpty else { throw EgressRefusal(.unresolvable, origin: origin, "\(host) does not resolve") }
        answers.withLock { answers in
            if answers.count > 10_000 { answers.removeAll() }
            answers[key] = (resolved, now + lifetime)
        }
        return resolved
    }

    /// Every address the system's resolver gives for `host`, IPv4 and IPv6.
    private static func getaddrinfo(_ host: String, port: Int) -> [IPAddressBytes] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard Foundation.getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [IPAddressBytes] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let socketAddress = current.pointee.ai_addr {
                switch Int32(socketAddress.pointee.sa_family) {
                case AF_INET:
                    socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        var address = v4.pointee.sin_addr
                        addresses.append(IPAddressBytes(bytes: withUnsafeBytes(of: &address) { Array($0) })!)
                    }
                case AF_INET6:
                    socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        var address = v6.pointee.sin6_addr
                        addresses.append(IPAddressBytes(bytes: withUnsafeBytes(of: &address) { Array($0) })!)
                    }
                default:
                    break
                }
            }
            entry = current.pointee.ai_next
        }
        return addresses
    }
}
