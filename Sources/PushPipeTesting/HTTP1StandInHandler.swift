import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import PushPipeCore

/// A stand-in that answers whole requests with JSON (FCM, Web Push push services), over
/// HTTP/1.1 or, where it offers it, HTTP/2 (each stream seen as an HTTP/1 exchange).
protocol HTTP1StandIn: AnyObject, Sendable {
    func handle(version: HTTPVersion, method: String, path: String, headers: HTTPHeaders, body: Data) -> (Int, [(String, String)], JSON)
    /// The answer as bytes: a stand-in that must send what is not JSON (a hostile push service's
    /// NUL bytes and invalid UTF-8) answers here; the others' JSON is serialised.
    func respond(version: HTTPVersion, method: String, path: String, headers: HTTPHeaders, body: Data) -> (Int, [(String, String)], Data)
    /// A client opened a connection (before TLS).
    func connected()
}

extension HTTP1StandIn {
    func connected() {}

    func respond(version: HTTPVersion, method: String, path: String, headers: HTTPHeaders, body: Data) -> (Int, [(String, String)], Data) {
        let (status, extra, json) = handle(version: version, method: method, path: path, headers: headers, body: body)
        return (status, extra, json.serialized())
    }

    /// A server over TLS (the authority's certificate for localhost) on 127.0.0.1, a free port,
    /// handing each request to the stand-in `box` will hold. `http2`: ALPN offers `h2` first,
    /// as push services do; HTTP/1.1 otherwise.
    static func bind(authority: TestCertificateAuthority, box: LateBound<Self>, port: Int = 0, http2: Bool = false) async throws -> any Channel {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(authority.serverCertificate)],
            privateKey: .privateKey(authority.serverKey)
        )
        tls.applicationProtocols = http2 ? ["h2", "http/1.1"] : ["http/1.1"]
        let context = try NIOSSLContext(configuration: tls)
        @Sendable func http1(_ channel: any Channel) -> EventLoopFuture<Void> {
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                try channel.pipeline.syncOperations.addHandler(HTTP1StandInHandler(box: box))
            }
        }
        return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                box.value?.connected()
                let tlsAdded = channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                }
                guard http2 else { return tlsAdded.flatMap { http1(channel) } }
                return tlsAdded.flatMap {
                    channel.configureHTTP2SecureUpgrade(
                        h2ChannelConfigurator: { connection in
                            connection.configureHTTP2Pipeline(mode: .server, connectionConfiguration: .init(), streamConfiguration: .init()) {
                                stream in
                                stream.eventLoop.makeCompletedFuture {
                                    try stream.pipeline.syncOperations.addHandlers([
                                        HTTP2FramePayloadToHTTP1ServerCodec(), HTTP1StandInHandler(box: box),
                                    ])
                                }
                            }.map { _ in }
                        },
                        http1ChannelConfigurator: http1
                    )
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
            let (status, extra, bytes) = standIn.respond(
                version: head.version,
                method: head.method.rawValue,
                path: String(head.uri.split(separator: "?").first ?? ""),
                headers: head.headers,
                body: body
            )
            // An HTTP/2 stream ends with its answer; the connection stays whatever the head says.
            HTTP1JSONResponse.write(
                status: status,
                headers: extra,
                body: ByteBuffer(data: bytes),
                keepAlive: head.isKeepAlive || head.version.major == 2,
                context: context
            )
        }
    }
}
