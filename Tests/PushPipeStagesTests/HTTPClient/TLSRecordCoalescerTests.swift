import NIOCore
import NIOEmbedded
import Testing

@testable import PushPipeStages

/// The frames written between two flushes reach TLS as one write (one record instead
/// of one per frame), in order, and each writer still learns how its write ended.
@Suite struct TLSRecordCoalescerTests {
    @Test func writesBetweenFlushesLeaveAsOneInOrder() throws {
        let channel = EmbeddedChannel(handler: TLSRecordCoalescer())
        let headers = channel.eventLoop.makePromise(of: Void.self)
        let payload = channel.eventLoop.makePromise(of: Void.self)
        var succeeded = 0
        headers.futureResult.whenSuccess { succeeded += 1 }
        payload.futureResult.whenSuccess { succeeded += 1 }
        channel.write(IOData.byteBuffer(ByteBuffer(string: "HEADERS|")), promise: headers)
        channel.write(IOData.byteBuffer(ByteBuffer(string: "DATA-HEADER|")), promise: nil)
        channel.write(IOData.byteBuffer(ByteBuffer(string: "payload")), promise: payload)
        #expect(try channel.readOutbound(as: IOData.self) == nil, "nothing leaves before the flush")
        #expect(succeeded == 0)

        channel.flush()
        guard case .byteBuffer(let written) = try channel.readOutbound(as: IOData.self) else {
            Issue.record("no write after the flush")
            return
        }
        #expect(String(buffer: written) == "HEADERS|DATA-HEADER|payload")
        #expect(try channel.readOutbound(as: IOData.self) == nil, "one write for the three")
        #expect(succeeded == 2)

        channel.write(IOData.byteBuffer(ByteBuffer(string: "next")), promise: nil)
        channel.flush()
        guard case .byteBuffer(let next) = try channel.readOutbound(as: IOData.self) else {
            Issue.record("no write after the second flush")
            return
        }
        #expect(String(buffer: next) == "next")
        _ = try channel.finish()
    }

    @Test func closingFailsWhatWasNotFlushed() throws {
        let channel = EmbeddedChannel(handler: TLSRecordCoalescer())
        let pending = channel.eventLoop.makePromise(of: Void.self)
        var failure: (any Error)?
        pending.futureResult.whenFailure { failure = $0 }
        channel.write(IOData.byteBuffer(ByteBuffer(string: "never sent")), promise: pending)
        channel.close(promise: nil)
        #expect(failure is ChannelError)
        #expect(try channel.readOutbound(as: IOData.self) == nil)
    }
}
