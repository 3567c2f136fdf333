import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// One long-lived HTTP/2 connection to a provider carrying many concurrent streams.
///
/// Requests from many tasks meet in an outbox; the first one into an empty outbox asks the
/// event loop to write, and the event loop writes everything queued by then in one go with
/// one flush. At high rates that is one event-loop task and one TLS record for dozens of
/// notifications instead of one each.
final class HTTP2Connection: Sendable {
    let channel: any Channel
    private let handler: NIOLoopBound<HTTP2StreamHandler>
    private let outbox = Mutex(Outbox())
    let gauge: HTTP2ConnectionGauge

    private struct Outbox {
        var requests: [HTTP2StreamRequest] = []
        var writeScheduled = false
    }

    private init(channel: any Channel, handler: NIOLoopBound<HTTP2StreamHandler>, gauge: HTTP2ConnectionGauge) {
        self.channel = channel
        self.handler = handler
        self.gauge = gauge
    }

    var isUsable: Bool { channel.isActive && !gauge.isGoingAway }

    /// What the connection keeps of an answer: the headers its provider reads, and the start of
    /// the body. A server may send more of either; the rest is counted and dropped.
    struct Reading: Sendable {
        var keptHeaders: [String]
        var bodyLimit: Int
    }

    /// Stops handing out this connection: streams in flight finish, then it closes.
    func retire() {
        gauge.setGoingAway()
        let handler = self.handler
        channel.eventLoop.execute { handler.value.retire() }
    }

    /// A connection, once the server's SETTINGS have arrived: before that its stream limit is
    /// unknown, and the pool would hand a burst of requests to it alone.
    ///
    /// - Parameters:
    ///   - gauge: made by the pool, which reads it to choose connections; it also carries
    ///     `max_streams` and, for connections the pool may close, the idle timeout.
    ///   - readyTimeout: for TCP, TLS and the SETTINGS together.
    ///   - addresses: where to connect, tried in order, when the caller resolved and checked
    ///     the name itself (a host a user chose); nil resolves `host`. Their lookup counts in
    ///     `readyTimeout`.
    static func connect(
        host: String,
        port: Int,
        addresses: EventLoopFuture<[SocketAddress]>? = nil,
        tls: NIOSSLContext,
        serverHostname: String?,
        gauge: HTTP2ConnectionGauge,
        readyTimeout: TimeAmount,
        reading: Reading,
        lastUsableStreamID: HTTP2StreamID,
        group: any EventLoopGroup
    ) -> EventLoopFuture<HTTP2Connection> {
        let loop = addresses?.eventLoop ?? group.next()
        let connectionPromise = OncePromise(loop.makePromise(of: HTTP2Connection.self))
        // TCP, TLS and the SETTINGS within `readyTimeout`, whatever each takes (the lookup,
        // a connect to an address that drops packets, a handshake never finished).
        let giveUp = loop.scheduleTask(in: readyTimeout) {
            connectionPromise.complete(with: .failure(HTTP2ConnectionError.notReady))
        }
        connectionPromise.futureResult.whenComplete { _ in giveUp.cancel() }
        // Each channel's handler, kept from its initializer: by the time the connect completes,
        // a server that refused h2 may have closed the channel and emptied its pipeline.
        let handlers = NIOLoopBoundBox.makeEmptyBox(valueType: [ObjectIdentifier: HTTP2StreamHandler].self, eventLoop: loop)
        @Sendable func bootstrap(connectTimeout: TimeAmount = .seconds(10)) -> ClientBootstrap {
            ClientBootstrap(group: loop)
                .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
                .connectTimeout(connectTimeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let handler = HTTP2StreamHandler(
                            gauge: gauge,
                            settingsTimeout: readyTimeout,
                            reading: reading,
                            lastUsableStreamID: lastUsableStreamID
                        )
                        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
                        // The headers are ours (fixed names, values checked in `prepare`); NIOHTTP2
                        // would re-validate every header of every request, for nothing.
                        configuration.headerBlockValidation = .disabled
                        // A request's content-length is ours, and an answer is read to its END_STREAM
                        // whatever it declares: checking lengths would scan every HEADERS frame's
                        // headers both ways, for nothing.
                        configuration.contentLengthValidation = .disabled
                        // Nothing here reads a pushed stream: a server may not open any.
                        configuration.initialSettings = nioDefaultSettings + [HTTP2Setting(parameter: .enablePush, value: 0)]
                        let sync = channel.pipeline.syncOperations
                        try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverHostname))
                        try sync.addHandler(TLSRecordCoalescer())
                        try sync.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: configuration))
                        try sync.addHandler(handler)
                        var known = handlers.value ?? [:]
                        known[ObjectIdentifier(channel)] = handler
                        handlers.value = known
                    }
                }
        }
        /// Each address in turn, each with its share of the time, until one connects or the
        /// caller gave up.
        @Sendable func connect(to addresses: ArraySlice<SocketAddress>, each timeout: TimeAmount) -> EventLoopFuture<any Channel> {
            guard let first = addresses.first else { return loop.makeFailedFuture(HTTP2ConnectionError.notReady) }
            let attempt = bootstrap(connectTimeout: timeout).connect(to: first)
            guard addresses.count > 1 else { return attempt }
            return attempt.flatMapError { error in
                connectionPromise.isCompleted ? loop.makeFailedFuture(error) : connect(to: addresses.dropFirst(), each: timeout)
            }
        }
        let connected =
            addresses.map { future in
                future.flatMap { addresses in
                    connect(
                        to: addresses[...],
                        each: min(.seconds(10), max(.seconds(1), .nanoseconds(readyTimeout.nanoseconds / Int64(max(1, addresses.count)))))
                    )
                }
            } ?? bootstrap().connect(host: host, port: port)
        connected.whenComplete { result in
            switch result {
            case .failure(let error):
                connectionPromise.complete(with: .failure(error))
            case .success(let channel):
                // Only the channel that connected tells its readiness: an attempt that failed
                // (another address, Happy Eyeballs' loser) ends its handler, which would
                // otherwise fail the connection while the winner is still starting.
                let handler = handlers.value?[ObjectIdentifier(channel)]
                handlers.value = nil
                guard let handler else {
                    connectionPromise.complete(with: .failure(HTTP2ConnectionError.notReady))
                    channel.close(promise: nil)
                    return
                }
                let connection = HTTP2Connection(channel: channel, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop), gauge: gauge)
                handler.whenReady { result in
                    // Ready after the caller gave up: nobody will use it.
                    if !connectionPromise.complete(with: result.map { connection }) { channel.close(promise: nil) }
                }
            }
        }
        return connectionPromise.futureResult
    }

    /// The pool reserved the request's place (`HTTP2ConnectionPool.connection(reserving:)`);
    /// it is given back when the request is answered.
    func send(headers: HPACKHeaders, body: ByteBuffer, timeout: TimeAmount) async throws -> HTTP2Answer {
        defer { gauge.remove(1) }
        return try await withCheckedThrowingContinuation { continuation in
            enqueue(
                CollectionOfOne(HTTP2StreamRequest(headers: headers, body: body, deadline: .now() + timeout, continuation: .single(continuation)))
            )
        }
    }

    /// Sends every request and returns once all are answered, in their order.
    func send(batch: [(headers: HPACKHeaders, body: ByteBuffer)], timeout: TimeAmount) async -> [Result<HTTP2Answer, any Error>] {
        defer { gauge.remove(batch.count) }
        return await withCheckedContinuation { continuation in
            let answers = HTTP2BatchAnswers(count: batch.count, continuation: continuation)
            let deadline = NIODeadline.now() + timeout
            enqueue(
                batch.enumerated().map { index, request in
                    HTTP2StreamRequest(headers: request.headers, body: request.body, deadline: deadline, continuation: .batch(answers, index: index))
                }
            )
        }
    }

    /// Queues requests in the outbox; the first into an empty outbox asks the event loop to write.
    private func enqueue(_ requests: some Collection<HTTP2StreamRequest>) {
        let scheduleWrite = outbox.withLock { outbox -> Bool in
            outbox.requests.append(contentsOf: requests)
            defer { outbox.writeScheduled = true }
            return !outbox.writeScheduled
        }
        guard scheduleWrite else { return }
        channel.eventLoop.execute { self.writeOutbox() }
    }

    private func writeOutbox() {
        let requests = outbox.withLock { outbox -> [HTTP2StreamRequest] in
            outbox.writeScheduled = false
            defer { outbox.requests.removeAll(keepingCapacity: true) }
            return outbox.requests
        }
        handler.value.send(requests)
    }
}

/// A promise two parties may complete (the connection's readiness, a failed connect): the
/// first one wins.
final class OncePromise<Value: Sendable>: Sendable {
    private let promise: Mutex<EventLoopPromise<Value>?>
    let futureResult: EventLoopFuture<Value>

    init(_ promise: EventLoopPromise<Value>) {
        self.promise = Mutex(promise)
        futureResult = promise.futureResult
    }

    var isCompleted: Bool { promise.withLock { $0 == nil } }

    /// Whether this completion was the first.
    @discardableResult
    func complete(with result: Result<Value, any Error>) -> Bool {
        guard let promise = promise.withLock({ $0.take() }) else { return false }
        promise.completeWith(result)
        return true
    }
}
