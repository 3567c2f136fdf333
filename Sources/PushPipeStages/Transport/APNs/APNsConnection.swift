import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// One long-lived HTTP/2 connection to APNs carrying many concurrent streams. NIOHTTP2
/// queues streams beyond the server's SETTINGS_MAX_CONCURRENT_STREAMS, so the server's
/// limit is honoured without a limit of our own.
final class APNsConnection: Sendable {
    let channel: any Channel
    let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    private let goingAway: NIOLockedValueBox<Bool>

    private init(channel: any Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer, goingAway: NIOLockedValueBox<Bool>) {
        self.channel = channel
        self.multiplexer = multiplexer
        self.goingAway = goingAway
    }

    var isUsable: Bool { channel.isActive && !goingAway.withLockedValue { $0 } }

    func retire() {
        goingAway.withLockedValue { $0 = true }
        // Streams in flight finish; the server closes the connection or we do when idle.
        channel.close(mode: .all, promise: nil)
    }

    static func connect(host: String, port: Int, tls: NIOSSLContext, serverHostname: String?, group: any EventLoopGroup)
        -> EventLoopFuture<APNsConnection>
    {
        let goingAway = NIOLockedValueBox(false)
        let multiplexerPromise = group.next().makePromise(of: NIOHTTP2Handler.StreamMultiplexer.self)
        let bootstrap = ClientBootstrap(group: group)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverHostname))
                    try sync.addHandler(FlushCoalescingHandler())
                    let multiplexer = try sync.configureHTTP2Pipeline(
                        mode: .client, connectionConfiguration: .init(), streamConfiguration: .init()
                    ) { stream in stream.eventLoop.makeSucceededVoidFuture() }
                    try sync.addHandler(GoAwayObserver(goingAway: goingAway))
                    multiplexerPromise.succeed(multiplexer)
                }
            }
        return bootstrap.connect(host: host, port: port).flatMap { channel in
            multiplexerPromise.futureResult.map { APNsConnection(channel: channel, multiplexer: $0, goingAway: goingAway) }
        }
    }

    func send(headers: HPACKHeaders, body: ByteBuffer, timeout: TimeAmount) async throws -> APNsResponse {
        let promise = channel.eventLoop.makePromise(of: APNsResponse.self)
        multiplexer.createStreamChannel { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(APNsStreamHandler(headers: headers, body: body, timeout: timeout, promise: promise))
            }
        }.whenFailure { promise.fail($0) }
        return try await promise.futureResult.get()
    }
}

/// Marks the connection as going away when APNs sends GOAWAY (Shutdown, idle, ...), so the
/// pool opens a new one for the next request.
final class GoAwayObserver: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTP2Frame
    let goingAway: NIOLockedValueBox<Bool>

    init(goingAway: NIOLockedValueBox<Bool>) { self.goingAway = goingAway }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .goAway = unwrapInboundIn(data).payload { goingAway.withLockedValue { $0 = true } }
        context.fireChannelRead(data)
    }
}
