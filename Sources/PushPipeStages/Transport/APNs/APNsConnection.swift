import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// One long-lived HTTP/2 connection to APNs carrying many concurrent streams.
///
/// Requests from many tasks meet in an outbox; the first one into an empty outbox asks the
/// event loop to write, and the event loop writes everything queued by then in one go with
/// one flush. At high rates that is one event-loop task and one TLS record for dozens of
/// notifications instead of one each.
final class APNsConnection: Sendable {
    let channel: any Channel
    private let handler: NIOLoopBound<APNsClientHandler>
    private let outbox = Mutex(Outbox())
    private let goingAway: GoingAwayFlag

    private struct Outbox {
        var requests: [APNsStreamRequest] = []
        var writeScheduled = false
    }

    private init(channel: any Channel, handler: NIOLoopBound<APNsClientHandler>, goingAway: GoingAwayFlag) {
        self.channel = channel
        self.handler = handler
        self.goingAway = goingAway
    }

    var isUsable: Bool { channel.isActive && !goingAway.isSet }

    /// Stops handing out this connection: streams in flight finish, then it closes.
    func retire() {
        goingAway.set()
        let handler = self.handler
        channel.eventLoop.execute { handler.value.retire() }
    }

    static func connect(host: String, port: Int, tls: NIOSSLContext, serverHostname: String?, maximumOpenStreams: Int,
                        lastUsableStreamID: HTTP2StreamID, group: any EventLoopGroup) -> EventLoopFuture<APNsConnection>
    {
        let loop = group.next()
        let connectionPromise = loop.makePromise(of: APNsConnection.self)
        let bootstrap = ClientBootstrap(group: loop)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let goingAway = GoingAwayFlag()
                    let handler = APNsClientHandler(maximumOpenStreams: maximumOpenStreams, lastUsableStreamID: lastUsableStreamID,
                                                    goingAway: { goingAway.set() })
                    var configuration = NIOHTTP2Handler.ConnectionConfiguration()
                    // The headers are ours (fixed names, values checked in `prepare`); NIOHTTP2
                    // re-validating every header of every request cost a few percent.
                    configuration.headerBlockValidation = .disabled
                    // Requests carry no content-length, and an answer is read to its END_STREAM
                    // whatever it declares: checking lengths scanned every HEADERS frame's
                    // headers both ways, for nothing.
                    configuration.contentLengthValidation = .disabled
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverHostname))
                    try sync.addHandler(TLSRecordCoalescer())
                    try sync.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: configuration))
                    try sync.addHandler(handler)
                    connectionPromise.succeed(APNsConnection(channel: channel, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop),
                                                             goingAway: goingAway))
                }
            }
        let connected = bootstrap.connect(host: host, port: port)
        // A connect that fails before the channel exists never runs the initializer.
        connected.whenFailure { connectionPromise.fail($0) }
        return connected.flatMap { _ in connectionPromise.futureResult }
    }

    func send(headers: HPACKHeaders, body: ByteBuffer, timeout: TimeAmount) async throws -> APNsResponse {
        try await withCheckedThrowingContinuation { continuation in
            enqueue(CollectionOfOne(APNsStreamRequest(headers: headers, body: body, deadline: .now() + timeout, continuation: .single(continuation))))
        }
    }

    /// Sends every request and returns once all are answered, in their order.
    func send(batch: [(headers: HPACKHeaders, body: ByteBuffer)], timeout: TimeAmount) async -> [Result<APNsResponse, any Error>] {
        await withCheckedContinuation { continuation in
            let answers = APNsBatchAnswers(count: batch.count, continuation: continuation)
            let deadline = NIODeadline.now() + timeout
            enqueue(batch.enumerated().map { index, request in
                APNsStreamRequest(headers: request.headers, body: request.body, deadline: deadline, continuation: .batch(answers, index: index))
            })
        }
    }

    /// Queues requests in the outbox; the first into an empty outbox asks the event loop to write.
    private func enqueue(_ requests: some Collection<APNsStreamRequest>) {
        let scheduleWrite = outbox.withLock { outbox -> Bool in
            outbox.requests.append(contentsOf: requests)
            defer { outbox.writeScheduled = true }
            return !outbox.writeScheduled
        }
        guard scheduleWrite else { return }
        channel.eventLoop.execute { self.writeOutbox() }
    }

    private func writeOutbox() {
        let requests = outbox.withLock { outbox -> [APNsStreamRequest] in
            outbox.writeScheduled = false
            defer { outbox.requests.removeAll(keepingCapacity: true) }
            return outbox.requests
        }
        handler.value.send(requests)
    }
}

/// Whether a connection still takes new requests; read by any thread, set by its event loop.
final class GoingAwayFlag: Sendable {
    private let value = Atomic(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}
