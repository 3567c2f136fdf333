import NIOCore
import NIOPosix
import NIOSSL

/// Completes the TLS handshake (ALPN `h2`) and then never writes a byte, or only its greeting:
/// an HTTP/2 peer that never sends its SETTINGS, or that allows no stream
/// (`noStreamsAllowed`), for clients that must not wait on such a server forever.
public final class SilentTLSServer: Sendable {
    public let port: Int
    private let channel: any Channel

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    /// An HTTP/2 SETTINGS frame with SETTINGS_MAX_CONCURRENT_STREAMS 0: the server takes no
    /// stream until it says otherwise (RFC 9113 §6.5.2), which it never does.
    public static let noStreamsAllowed: [UInt8] = [0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0]

    /// - Parameter greeting: written once, after the handshake (TLS holds it until then).
    public static func start(authority: TestCertificateAuthority, greeting: [UInt8] = []) async throws -> SilentTLSServer {
        let tls = try authority.serverContext()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    try channel.pipeline.syncOperations.addHandler(Greeter(greeting: greeting))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return SilentTLSServer(port: channel.localAddress?.port ?? 0, channel: channel)
    }

    public var baseURL: String { "https://localhost:\(port)" }

    public func stop() async {
        try? await channel.close()
    }

    private final class Greeter: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let greeting: [UInt8]
        init(greeting: [UInt8]) { self.greeting = greeting }

        func channelActive(context: ChannelHandlerContext) {
            if !greeting.isEmpty { context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: greeting)), promise: nil) }
            context.fireChannelActive()
        }

        /// What the client sends is read and dropped.
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    }
}
