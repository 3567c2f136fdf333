import Foundation
import PushPipeCore
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A stand-in that answers whole HTTP/1 requests with JSON (FCM, Web Push push services).
protocol HTTP1StandIn: AnyObject, Sendable {
    func handle(method: String, path: String, headers: HTTPHeaders, body: Data) -> (Int, [(String, String)], JSON)
}

extension HTTP1StandIn {
    /// An HTTP/1.1 server over TLS (the authority's certificate for localhost) on 127.0.0.1, a
    /// free port, handing each request to the stand-in `box` will hold.
    static func bind(authority: TestCertificateAuthority, box: LateBound<Self>, port: Int = 0) async throws -> any Channel {
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(authority.serverCertificate)],
                                                           privateKey: .privateKey(authority.serverKey))
        tls.applicationProtocols = ["http/1.1"]
        let context = try NIOSSLContext(configuration: tls)
        return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(HTTP1StandInHandler(box: box))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
    }
}

/// Collects a request (head, body, end) and hands it to its stand-in.
final class HTTP1StandInHandler<StandIn: HTTP1StandIn>: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    let box: LateBound<StandIn>
    var head: HTTPRequestHead?
    var body = Data()

    init(box: LateBound<StandIn>) { self.box = box }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = Data()
        case .body(let buffer):
            body.append(contentsOf: buffer.readableBytesView)
        case .end:
            guard let head, let standIn = box.value else { return }
            let (status, extra, json) = standIn.handle(method: head.method.rawValue, path: String(head.uri.split(separator: "?").first ?? ""),
                                                       headers: head.headers, body: body)
            HTTP1JSONResponse.write(status: status, headers: extra, body: ByteBuffer(data: json.serialized()), keepAlive: head.isKeepAlive,
                                    context: context)
        }
    }
}
