import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2

/// One request on one HTTP/2 stream: writes HEADERS and DATA, collects the answer,
/// and fails the request if nothing complete arrives before the deadline.
final class APNsStreamHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let headers: HPACKHeaders
    private let body: ByteBuffer
    private let timeout: TimeAmount
    private let promise: EventLoopPromise<APNsResponse>
    private var status: Int?
    private var apnsID: String?
    private var received = ByteBuffer()
    private var sent = false
    private var timer: Scheduled<Void>?

    init(headers: HPACKHeaders, body: ByteBuffer, timeout: TimeAmount, promise: EventLoopPromise<APNsResponse>) {
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.promise = promise
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { send(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context: context)
        context.fireChannelActive()
    }

    private func send(context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        let promise = self.promise
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: timeout) {
            promise.fail(APNsConnectionError.timedOut)
            channel.close(promise: nil)
        }
        context.write(wrapOutboundOut(.headers(.init(headers: headers, endStream: false))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: true))), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            if let code = frame.headers.first(name: ":status").flatMap(Int.init) { status = code }
            if let id = frame.headers.first(name: "apns-id") { apnsID = id }
            if frame.endStream { complete() }
        case .data(let frame):
            if case .byteBuffer(var buffer) = frame.data { received.writeBuffer(&buffer) }
            if frame.endStream { complete() }
        default:
            break
        }
    }

    private func complete() {
        timer?.cancel()
        guard let status else {
            promise.fail(APNsConnectionError.malformedResponse)
            return
        }
        promise.succeed(APNsResponse(status: status, apnsID: apnsID, body: Data(received.readableBytesView)))
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        promise.fail(APNsConnectionError.streamClosed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        timer?.cancel()
        promise.fail(error)
        context.close(promise: nil)
    }
}

enum APNsConnectionError: Error, CustomStringConvertible {
    case timedOut, streamClosed, malformedResponse, goingAway

    var description: String {
        switch self {
        case .timedOut: "no answer from APNs within the request timeout"
        case .streamClosed: "the HTTP/2 stream or connection closed before an answer"
        case .malformedResponse: "APNs answered without a status"
        case .goingAway: "the connection is going away (GOAWAY)"
        }
    }
}
