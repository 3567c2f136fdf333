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
    /// When the connection closes unless a request has arrived whole; nil while answering.
    private var deadline: NIODeadline?
    /// One timer at a time, moved lazily: a request answered moves only `deadline`, and the
    /// timer, when it fires early, waits again for the later one. Scheduling and cancelling
    /// a task of the loop for every request cost more than the rest of this handler.
    private var timer: Scheduled<Void>?
    /// Requests read whole less responses ended: above 0 while answering. Below 0 after an
    /// answer that came before its request's end (a 404 sent before the body): that end brings
    /// it back to 0, a request already answered, and the connection is timed from there.
    private var pending = 0

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
        stop()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) {
            pending += 1
            if pending > 0 {
                deadline = nil
            } else {
                // Answered already: the next request has its whole time from here.
                arm(context)
            }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            pending -= 1
            if pending <= 0 { arm(context) }
        }
        context.write(data, promise: promise)
    }

    private func arm(_ context: ChannelHandlerContext) {
        let due = context.eventLoop.now + timeout
        deadline = due
        if timer == nil { wait(until: due, context) }
    }

    private func wait(until due: NIODeadline, _ context: ChannelHandlerContext) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: due) {
            let (handler, context) = bound.value
            handler.timer = nil
            // Answering: nothing is timed, and the answer's end arms again.
            guard let deadline = handler.deadline else { return }
            if deadline > context.eventLoop.now {
                handler.wait(until: deadline, context)
            } else {
                context.close(promise: nil)
            }
        }
    }

    private func stop() {
        deadline = nil
        timer?.cancel()
        timer = nil
    }
}
