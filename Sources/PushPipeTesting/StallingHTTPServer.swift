import NIOCore
import NIOPosix

/// A plain-HTTP server on 127.0.0.1 that answers every request's head with `200` and a
/// `content-length` it never sends: a peer whose body never comes, for clients that must bound
/// a whole exchange and not only its head.
public final class StallingHTTPServer: Sendable {
    public let port: Int
    private let channel: any Channel

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    public static func start() async throws -> StallingHTTPServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(HeadOnly()) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return StallingHTTPServer(port: channel.localAddress?.port ?? 0, channel: channel)
    }

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    public func stop() async { try? await channel.close() }

    /// Writes the answer's head once the request's head has come (its blank line), then nothing.
    private final class HeadOnly: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        var seen = ""
        var answered = false

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            seen += String(buffer: unwrapInboundIn(data))
            guard !answered, seen.contains("\r\n\r\n") else { return }
            answered = true
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n")), promise: nil)
        }
    }
}
