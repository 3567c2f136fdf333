import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import PushPipeCore

/// The one way out for requests to URLs users chose (`EgressPolicy`): the URL is checked, its
/// name resolved and every address checked before anything is sent, the connection's peer is
/// checked again once connected (a name that resolved to a public address and then to
/// 10.0.0.5 is refused too), redirects are never followed, and at most `bodyLimit` bytes of
/// an answer are read.
struct EgressHTTPClient: Sendable {
    let policy: EgressPolicy
    /// Redirects off, peers checked, no retried connections: for every origin but the exempt ones.
    private let checked: HTTPClient
    /// Redirects off, peers not checked: for `policy.privateOrigins` only.
    private let exempt: HTTPClient

    /// What a caller may know of an answer: its status, headers, and the start of its body.
    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]
    }

    init(policy: EgressPolicy, trusting caFile: String) {
        self.policy = policy
        checked = SharedHTTPClients.egressClient(trusting: caFile, checkingPeers: true)
        exempt = SharedHTTPClients.egressClient(trusting: caFile, checkingPeers: false)
    }

    /// Sends `request` if the policy allows its URL; a refusal is thrown as `EgressRefusal`,
    /// before anything was sent, and so is a redirect, which is not followed.
    /// `timeout` bounds the whole exchange, the name's lookup and the answer's body included:
    /// AsyncHTTPClient's deadline ends with the answer's head, and a service that sends a head
    /// and then nothing would hold the send, and a slot of its pipeline, for ever.
    func execute(_ request: HTTPClientRequest, timeout: TimeAmount, bodyLimit: Int = 1024) async throws -> Answer {
        try await BoundedExchange.run(within: .nanoseconds(timeout.nanoseconds)) {
            try await self.exchange(request, timeout: timeout, bodyLimit: bodyLimit)
        }
    }

    private func exchange(_ request: HTTPClientRequest, timeout: TimeAmount, bodyLimit: Int) async throws -> Answer {
        let origin = try policy.check(url: request.url)
        let isExempt = policy.privateOrigins.contains(origin)
        if !isExempt {
            let (host, port) = try Self.hostAndPort(request.url, origin: origin)
            _ = try await policy.checkedAddresses(of: host, port: port, origin: origin)
        }
        let response = try await (isExempt ? exempt : checked).execute(request, timeout: timeout)
        let status = Int(response.status.code)
        if (300..<400).contains(status) {
            throw EgressRefusal(.redirect, origin: origin, "answered \(status) with a redirect, which is not followed")
        }
        return Answer(status: status, headers: response.headers, body: try await BoundedExchange.prefix(of: response.body, limit: bodyLimit))
    }

    static func hostAndPort(_ url: String, origin: String) throws(EgressRefusal) -> (String, Int) {
        guard let components = URLComponents(string: url), var host = components.host else {
            throw EgressRefusal(.notHTTPS, origin: origin, "no host")
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host, components.port ?? 443)
    }

    /// Run on every new connection of the checked client, before any request goes on it.
    static func refuseNonPublicPeer(_ channel: any Channel) -> EventLoopFuture<Void> {
        if let ip = channel.remoteAddress?.ipAddress, let address = IPAddressBytes(ip), address.isPublic {
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        let peer = channel.remoteAddress.map { "\($0)" } ?? "an unknown peer"
        channel.close(promise: nil)
        return channel.eventLoop.makeFailedFuture(EgressRefusal(.privateAddress, origin: "", "connected to \(peer), a private or reserved address"))
    }
}

extension EgressPolicy {
    /// Every address `host` resolves to, each checked: one private or reserved address refuses
    /// the origin (`EgressRefusal`) before anything connects.
    func checkedAddresses(of host: String, port: Int, origin: String) async throws -> [IPAddressBytes] {
        let addresses = try await EgressResolver.shared.addresses(of: host, port: port, origin: origin)
        for address in addresses where !permits(address, origin: origin) {
            throw EgressRefusal(.privateAddress, origin: origin, "resolves to \(address), a private or reserved address")
        }
        return addresses
    }
}
