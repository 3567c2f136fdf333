import NIOCore

/// Joins everything written between two flushes into one write, so TLS seals it as one record.
///
/// `NIOHTTP2Handler` writes each frame on its own (a DATA frame as its 9-byte header and its
/// payload), and `NIOSSLHandler` seals each write as a TLS record of its own: three records per
/// notification, each with its own encryption call, header and tag, and each decrypted on its
/// own by the server. A batch of notifications is flushed once, so here it becomes a few records
/// of up to 16 KB. Sits between the TLS and the HTTP/2 handler; lives on the connection's loop.
final class TLSRecordCoalescer: ChannelOutboundHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private var pending: ByteBuffer?
    private var promises: [EventLoopPromise<Void>] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .byteBuffer(var buffer):
            if pending == nil { pending = context.channel.allocator.buffer(capacity: max(buffer.readableBytes, 16_384)) }
            pending!.writeBuffer(&buffer)
            if let promise { promises.append(promise) }
        case .fileRegion:
            // Not written by HTTP/2; kept in order if it ever is.
            writePending(context: context)
            context.write(data, promise: promise)
        }
    }

    func flush(context: ChannelHandlerContext) {
        writePending(context: context)
        context.flush()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode != .input { failPending(ChannelError.ioOnClosedChannel) }
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        failPending(ChannelError.ioOnClosedChannel)
    }

    private func writePending(context: ChannelHandlerContext) {
        guard let buffer = pending else { return }
        pending = nil
        let waiting = promises
        promises.removeAll(keepingCapacity: true)
        switch waiting.count {
        case 0:
            context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: nil)
        case 1:
            context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: waiting[0])
        default:
            let written = context.eventLoop.makePromise(of: Void.self)
            for promise in waiting { written.futureResult.cascade(to: promise) }
            context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: written)
        }
    }

    private func failPending(_ error: any Error) {
        pending = nil
        let waiting = promises
        promises.removeAll()
        for promise in waiting { promise.fail(error) }
    }
}
