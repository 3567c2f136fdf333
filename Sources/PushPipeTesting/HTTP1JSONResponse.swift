import NIOCore
import NIOHTTP1

/// The one way the HTTP/1 stand-ins answer: a JSON body with its length, extra headers, and
/// `connection: close` when the client asked for it.
enum HTTP1JSONResponse {
    static func write(status: Int, headers extra: [(String, String)], body: ByteBuffer, keepAlive: Bool, context: ChannelHandlerContext) {
        var headers = HTTPHeaders([("content-type", "application/json"), ("content-length", String(body.readableBytes))])
        for (name, value) in extra { headers.add(name: name, value: value) }
        if !keepAlive { headers.add(name: "connection", value: "close") }
        let head = HTTPResponseHead(version: .http1_1, status: .init(statusCode: status), headers: headers)
        context.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
        context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil))).whenComplete { _ in if !keepAlive { channel.close(promise: nil) } }
    }
}
