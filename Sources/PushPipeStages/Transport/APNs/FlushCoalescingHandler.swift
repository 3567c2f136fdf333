import NIOCore

/// Turns many flushes in one event-loop tick into one. Each request's stream flushes on its
/// own; without this every notification costs a TLS record and a `write(2)` of its own.
/// Placed between TLS and HTTP/2, the flush runs once the tick's queued work is done.
final class FlushCoalescingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = NIOAny
    private var flushPending = false

    func flush(context: ChannelHandlerContext) {
        guard !flushPending else { return }
        flushPending = true
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = loopBound.value
            handler.flushPending = false
            context.flush()
        }
    }
}
