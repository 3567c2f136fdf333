import NIOCore
import NIOPosix
import NIOSSL

/// Completes the TLS handshake (ALPN `h2`) and then never writes a byte: an HTTP/2 peer that
/// never sends its SETTINGS, for clients that must not wait on such a server forever.
public final class SilentTLSServer: Sendable {
    public let port: Int
    private let channel: any Channel

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    public static func start(authority: TestCertificateAuthority) async throws -> SilentTLSServer {
        let tls = try authority.serverContext()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return SilentTLSServer(port: channel.localAddress?.port ?? 0, channel: channel)
    }

    public var baseURL: String { "https://localhost:\(port)" }

    public func stop() async {
        try? await channel.close()
    }
}
