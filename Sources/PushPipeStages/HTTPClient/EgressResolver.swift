import Foundation
import NIOCore
import NIOPosix
import PushPipeCore
import Synchronization

/// Resolves the names of URLs users chose, so their addresses are checked before a connection
/// is made (`EgressHTTPClient`). A name chosen by a user may be served by a name server that
/// never answers, so lookups run on threads of their own (never the process's shared pool),
/// each waited for at most `longestLookup`; answers are kept for `lifetime`, failures too, and
/// a kept answer past its lifetime is still used while it is looked up again, so a push
/// service that resolved once is never held up behind a slow name.
final class EgressResolver: Sendable {
    static let shared = EgressResolver()
    private let lifetime: Duration = .seconds(30)
    private let longestLookup: Duration = .seconds(5)
    private let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 4)
        pool.start()
        return pool
    }()

    private struct Entry {
        var addresses: [IPAddressBytes]
        var until: ContinuousClock.Instant
        var refreshing = false
    }

    private let answers = Mutex<[String: Entry]>([:])

    func addresses(of host: String, port: Int, origin: String) async throws -> [IPAddressBytes] {
        if let literal = IPAddressBytes(host) { return [literal] }
        let key = "\(host):\(port)"
        let now = ContinuousClock.now
        let kept = answers.withLock { answers -> (addresses: [IPAddressBytes], fresh: Bool, refresh: Bool)? in
            guard var entry = answers[key] else { return nil }
            let fresh = entry.until > now
            let refresh = !fresh && !entry.addresses.isEmpty && !entry.refreshing
            if refresh {
                entry.refreshing = true
                answers[key] = entry
            }
            return (entry.addresses, fresh, refresh)
        }
        if let kept {
            if kept.fresh {
                guard !kept.addresses.isEmpty else { throw EgressRefusal(.unresolvable, origin: origin, "\(host) does not resolve") }
                return kept.addresses
            }
            if !kept.addresses.isEmpty {
                if kept.refresh { Task { await self.lookUp(host, port: port, key: key) } }
                return kept.addresses
            }
        }
        let resolved = await lookUp(host, port: port, key: key)
        guard !resolved.isEmpty else { throw EgressRefusal(.unresolvable, origin: origin, "\(host) does not resolve in time") }
        return resolved
    }

    /// Looks `host` up (waiting at most `longestLookup`) and keeps the answer: an empty one for
    /// a failure, unless an earlier answer is kept, which then serves another `lifetime`.
    @discardableResult
    private func lookUp(_ host: String, port: Int, key: String) async -> [IPAddressBytes] {
        // Not a task group: it would wait for a lookup that blocks past the limit anyway.
        let resolved: [IPAddressBytes] = await withCheckedContinuation { continuation in
            let answered = Mutex(false)
            let answer: @Sendable ([IPAddressBytes]) -> Void = { addresses in
                if answered.withLock({ done in
                    defer { done = true }
                    return !done
                }) {
                    continuation.resume(returning: addresses)
                }
            }
            pool.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.any()) { Self.getaddrinfo(host, port: port) }
                .whenComplete { answer((try? $0.get()) ?? []) }
            Task { [longestLookup] in
                try? await Task.sleep(for: longestLookup)
                answer([])
            }
        }
        return answers.withLock { answers in
            if answers.count > 10_000 { answers.removeAll() }
            let kept = resolved.isEmpty ? answers[key]?.addresses ?? [] : resolved
            answers[key] = Entry(addresses: kept, until: .now + lifetime)
            return kept
        }
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
