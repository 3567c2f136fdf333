import ArgumentParser
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// An APNs stand-in that answers every request `--delay-ms` after it arrived: a round trip to
/// APNs without a real network (the kernel here has no netem). It only answers 200 with an
/// `apns-id`: it is for speed, like the nginx stand-in, and checks nothing.
///
/// Frames are handled on the connection, one timer per connection for the answers due (they
/// fall due in arrival order), so that the stand-in costs little next to the client measured.
/// Handshakes are not delayed: on a real network a new connection also takes two or three
/// round trips, so a pool grows faster here than it would there.
struct DelayedAPNsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "apns-delayed", abstract: "Serve APNs answers after a delay on 127.0.0.1.")

    @Option(help: "Port on 127.0.0.1.") var port: Int
    @Option(help: "Milliseconds from a request's arrival to its answer.") var delayMs = 50
    @Option(help: "SETTINGS_MAX_CONCURRENT_STREAMS per connection.") var streams = 100
    @Option(help: "PEM certificate chain.") var certificate: String
    @Option(help: "PEM private key.") var key: String
    @Option(help: "Exit after this many seconds (bounded).") var seconds = 1800.0

    func run() async throws {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
        )
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let delay = TimeAmount.milliseconds(Int64(delayMs))
        let settings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: streams),
            HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
        ]
        let accepted = ConnectionCounter()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    // One line per connection: the benchmark counts what the pool opened.
                    FileHandle.standardOutput.write(Data("connection \(accepted.next())\n".utf8))
                    var configuration = NIOHTTP2Handler.ConnectionConfiguration()
                    configuration.initialSettings = settings
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: context))
                    try sync.addHandler(NIOHTTP2Handler(mode: .server, connectionConfiguration: configuration))
                    try sync.addHandler(DelayedAnswers(delay: delay))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        FileHandle.standardOutput.write(Data("listening \(port)\n".utf8))
        try await Task.sleep(for: .seconds(seconds))
        try await channel.close()
    }
}

final class ConnectionCounter: Sendable {
    private let value = Atomic(0)
    func next() -> Int { value.wrappingAdd(1, ordering: .relaxed).newValue }
}

/// Answers each stream `delay` after its request ended, in arrival order.
final class DelayedAnswers: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    let delay: TimeAmount
    private var due = CircularBuffer<(stream: HTTP2StreamID, at: NIODeadline)>()
    private var timer: Scheduled<Void>?
    private var unacknowledgedBytes = 0
    private let answer: HPACKHeaders = [":status": "200", "apns-id": "7f2a3c1e-0000-4000-8000-000000000000"]

    init(delay: TimeAmount) { self.delay = delay }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers) where headers.endStream:
            due.append((frame.streamID, .now() + delay))
        case .data(let data):
            unacknowledgedBytes += data.data.readableBytes
            if data.endStream { due.append((frame.streamID, .now() + delay)) }
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // The connection's receive window: the streams' windows are large enough for a body each.
        if unacknowledgedBytes >= 32_768 {
            context.writeAndFlush(
                wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledgedBytes))),
                promise: nil
            )
            unacknowledgedBytes = 0
        }
        schedule(context: context)
        context.fireChannelReadComplete()
    }

    private func schedule(context: ChannelHandlerContext) {
        guard timer == nil, let first = due.first else { return }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: first.at) {
            let (handler, context) = loopBound.value
            handler.timer = nil
            handler.answerDue(context: context)
        }
    }

    private func answerDue(context: ChannelHandlerContext) {
        let now = NIODeadline.now()
        var answered = false
        while let first = due.first, first.at <= now {
            due.removeFirst()
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: first.stream, payload: .headers(.init(headers: answer, endStream: true)))),
                promise: nil
            )
            answered = true
        }
        if answered { context.flush() }
        schedule(context: context)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
