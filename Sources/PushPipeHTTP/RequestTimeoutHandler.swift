import NIOCore
import NIOHTTPTypes

/// Closes a connection whose next request does not arrive whole in time: counted from the
/// connection's start, or from its last response, to the end of the request's body. A client
/// that trickles its headers or its body (slowloris) holds a connection for that long at most,
/// and an idle keep-alive connection is closed after it too. While a request is being
/// answered nothing is timed: a slow pipeline is not the client's fault.
final class RequestTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?
    /// Requests read whole whose response has not ended yet.
    private var answering = 0

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) {
            answering += 1
            disarm()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            answering = max(0, answering - 1)
            if answering == 0 { arm(context) }
        }
        context.write(data, promise: promise)
    }

    private func arm(_ context: ChannelHandlerContext) {
        disarm()
        let context = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.value.eventLoop.scheduleTask(in: timeout) {
            context.value.close(promise: nil)
        }
    }

    private func disarm() {
        deadline?.cancel()
        deadline = nil
    }
}
