import NIOCore
import NIOPosix
import PushPipeCore
import PushPipeTesting
import Testing

@testable import PushPipeStages

/// Connecting to the addresses a caller resolved and checked itself (a push service's).
@Suite struct HTTP2ConnectionTests {
    /// A port on 127.0.0.1 that nothing listens on (bound, noted and closed).
    static func refusingPort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(channel.localAddress?.port)
        try await channel.close()
        return port
    }

    /// The first address refuses (a name's IPv6 address where this host has no route): the
    /// next one is tried, and the connection it makes is the one handed back, whatever the
    /// refused attempt's pipeline did as it ended.
    @Test(.timeLimit(.minutes(1))) func theNextAddressIsTriedWhenOneRefuses() async throws {
        let directory = try TemporaryDirectory("h2-connect")
        defer { directory.remove() }
        let authority = try TestCertificateAuthority()
        try authority.writeCACertificate(to: directory.file("ca.pem"))
        let standIn = try await WebPushStandIn.start(authority: authority, http2: true)
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let addresses = loop.makeSucceededFuture([
            try SocketAddress(ipAddress: "127.0.0.1", port: try await Self.refusingPort()),
            try SocketAddress(ipAddress: "127.0.0.1", port: standIn.port),
        ])
        let connection = try await HTTP2Connection.connect(
            host: "localhost",
            port: standIn.port,
            addresses: addresses,
            tls: try HTTP2ConnectionPool.tlsContext(caFile: directory.file("ca.pem"), http1: true),
            serverHostname: "localhost",
            gauge: HTTP2ConnectionGauge(maximumOpenStreams: 10),
            readyTimeout: .seconds(20),
            reading: WebPushResponse.reading,
            lastUsableStreamID: HTTP2StreamHandler.defaultLastUsableStreamID,
            group: loop
        ).get()
        #expect(connection.isUsable)
        #expect(standIn.connections == 1)
        try await connection.channel.close()
        await standIn.stop()
    }
}
