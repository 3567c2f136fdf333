import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOTLS

/// Carries requests as HTTP/2 frames on the connection itself: one entry per stream in a
/// table, no child channel, pipeline or promise per notification. A child channel per stream
/// (NIOHTTP2's multiplexer) costs a large share of the event loop's time at APNs rates.
///
/// `NIOHTTP2Handler` still runs the protocol: it keeps the server's
/// SETTINGS_MAX_CONCURRENT_STREAMS by buffering new streams, does flow control of what we send,
/// answers PING and SETTINGS. What the multiplexer did besides is done here: stream ids,
/// the connection's receive window, and telling each request how it ended. Lives on the
/// connection's event loop only.
final class HTTP2StreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct OpenStream {
        var continuation: HTTP2Completion
        var status: Int?
        var headers: [(name: String, value: String)] = []
        var body: ByteBuffer?
    }

    private var context: ChannelHandlerContext?
    private var streams: HTTP2StreamTable<OpenStream>
    /// Requests beyond `maximumOpenStreams`, oldest first.
    private var waiting = CircularBuffer<HTTP2StreamRequest>()
    /// NIOHTTP2 finds and removes streams in lists that grow with the number open: a thousand
    /// open streams cost more per request than a hundred, for no more throughput.
    private let maximumOpenStreams: Int
    /// Streams in the order they were opened, and their deadlines (in that order when every
    /// request has the same timeout, APNs'; not when a request brings what is left of its
    /// send's time). One timer serves them all, armed for the earliest (`arm`).
    private var deadlines = CircularBuffer<(stream: HTTP2StreamID, deadline: NIODeadline)>()
    private var timer: Scheduled<Void>?
    private var timerDeadline: NIODeadline?
    private var nextStreamID = HTTP2StreamID(1)
    /// Received DATA bytes not yet given back to the server with WINDOW_UPDATE, as NIOHTTP2
    /// counts them (`NIOHTTP2WindowUpdatedEvent`): frames of a stream reset here are counted
    /// too, though never read, and their window must be given back all the same.
    private var unacknowledgedBytes = 0
    /// Streams whose answer reached `reading.bodyLimit` during this read, to be reset after it.
    private var cutShort: [HTTP2StreamID] = []
    private var failure: (any Error)?
    private var closeWhenIdle = false
    /// Until the server's first SETTINGS arrive its stream limit is unknown (HTTP/2 then allows
    /// any number), so nothing is sent before them.
    private var serverSettingsReceived = false
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (APNs changes it during a connection's life).
    private var serverStreamLimit = Int.max
    /// Fails the connection if the server's SETTINGS do not come before the first request's deadline.
    private var settingsTimer: Scheduled<Void>?
    /// The pool's view of this connection, once it is the one connected (`whenReady`): a
    /// connect tried on several addresses (or by Happy Eyeballs) makes a pipeline for each,
    /// and the ones that lost end without telling the pool anything.
    private var gauge: HTTP2ConnectionGauge?
    private let offeredGauge: HTTP2ConnectionGauge
    private let reading: HTTP2Connection.Reading
    private let lastUsableStreamID: HTTP2StreamID
    private let settingsTimeout: TimeAmount
    /// Told when the connection is ready or has failed to become so, then nil.
    private var ready: ((Result<Void, any Error>) -> Void)?
    /// Whether it became ready or failed to, kept for a `whenReady` that comes later: on a busy
    /// loop the server's SETTINGS (or a refusal of h2) may come before the connect's callback.
    private var readiness: Result<Void, any Error>?
    /// When the last stream closed with nothing waiting; nil while busy. Only connections the
    /// pool may close (those with an idle timeout) keep it.
    private var idleSince: NIODeadline?
    private var idleTimer: Scheduled<Void>?

    /// Stream ids are 31 bits and never reused: after about a billion requests a connection
    /// makes way for a new one.
    static let defaultLastUsableStreamID = HTTP2StreamID(Int32.max - 1024)
    static let windowUpdateThreshold = 32_768
    /// The connection's receive window, as HTTP/2 begins it and as WINDOW_UPDATE restores it.
    static let connectionWindow = 65_535
    /// A server that repeats a kept header without end is not followed past this.
    static let keptHeadersPerAnswer = 16

    /// - Parameters:
    ///   - gauge: `max_streams` and the idle timeout come from it; the handler publishes there
    ///     what the pool needs: going away (GOAWAY, out of stream ids, closed) and the stream limit.
    ///   - lastUsableStreamID: the connection retires after opening this stream (tests lower it).
    ///   - settingsTimeout: how long the connection may take to become ready (TCP, TLS, the
    ///     server's SETTINGS).
    ///   - reading: which headers of an answer are kept, and how much of its body.
    init(
        gauge: HTTP2ConnectionGauge,
        settingsTimeout: TimeAmount,
        reading: HTTP2Connection.Reading,
        lastUsableStreamID: HTTP2StreamID = defaultLastUsableStreamID
    ) {
        self.settingsTimeout = settingsTimeout
        self.reading = reading
        maximumOpenStreams = gauge.streamLimit
        offeredGauge = gauge
        streams = HTTP2StreamTable(maximumOpen: maximumOpenStreams)
        self.lastUsableStreamID = lastUsableStreamID
    }

    private func goingAway() { gauge?.setGoingAway() }

    /// `body` is told once: when the server's SETTINGS arrive, or when the connection fails
    /// first. Called for the channel that connected, which from then on reports to the gauge.
    func whenReady(_ body: @escaping (Result<Void, any Error>) -> Void) {
        gauge = offeredGauge
        if failure != nil || closeWhenIdle { offeredGauge.setGoingAway() }
        // What the server's SETTINGS said before the pool was listening.
        if serverStreamLimit != Int.max { offeredGauge.setStreamLimit(min(maximumOpenStreams, serverStreamLimit)) }
        noteIdleIfSo()
        if let readiness {
            body(readiness)
        } else {
            ready = body
        }
    }

    private func tellReadiness(_ result: Result<Void, any Error>) {
        guard readiness == nil else { return }
        readiness = result
        ready.take()?(result)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        waitForServerSettings(context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        endConnection(streamsFailWith: HTTP2ConnectionError.streamClosed, cause: nil)
        self.context = nil
    }

    /// Opens one stream per request, up to `maximumOpenStreams`, and flushes once for the
    /// whole batch; the rest wait for streams to finish.
    func send(_ requests: [HTTP2StreamRequest]) {
        waiting.append(contentsOf: requests)
        // Each request's deadline holds from now, waiting for a stream or on one; requests
        // may have deadlines of their own (what is left of a send's time), in any order.
        for request in requests { arm(for: request.deadline) }
        openWaitingStreams()
    }

    private func openWaitingStreams() {
        guard let context, failure == nil, !closeWhenIdle else {
            // Never written: another connection takes them, unless this one broke.
            let error = failure ?? HTTP2ConnectionError.closedBeforeSending
            while let request = waiting.popFirst() { request.continuation.resume(throwing: error) }
            return
        }
        // Requests sent before the connection was ready wait for the SETTINGS, or fail with
        // the connection when they do not come in time.
        guard serverSettingsReceived else { return }
        var opened = false
        defer { if closeWhenIdle { openWaitingStreams() } }
        while !closeWhenIdle, streams.count < min(maximumOpenStreams, serverStreamLimit), let request = waiting.popFirst() {
            if request.deadline <= .now() {
                request.continuation.resume(throwing: HTTP2ConnectionError.timedOut)
                continue
            }
            let id = nextStreamID
            nextStreamID = HTTP2StreamID(Int32(id) + 2)
            if nextStreamID > lastUsableStreamID {
                // Out of stream ids: the streams open finish, then the connection closes.
                closeWhenIdle = true
                goingAway()
            }
            streams.insert(OpenStream(continuation: request.continuation), for: id)
            deadlines.append((id, request.deadline))
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: request.headers)))), promise: nil)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))),
                promise: nil
            )
            opened = true
        }
        guard opened else { return }
        idleSince = nil
        context.flush()
    }

    /// The connection is ready once the server's SETTINGS arrived (its stream limit is known
    /// then); until `settingsTimeout` has passed since it was made.
    private func waitForServerSettings(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        settingsTimer = context.eventLoop.scheduleTask(in: settingsTimeout) {
            let handler = loopBound.value
            guard !handler.serverSettingsReceived else { return }
            handler.endConnection(streamsFailWith: HTTP2ConnectionError.noServerSettings, cause: HTTP2ConnectionError.noServerSettings)
            handler.context?.close(promise: nil)
        }
    }

    /// Lets the streams in flight finish, then closes; new requests fail with `closedBeforeSending`.
    func retire() {
        closeWhenIdle = true
        goingAway()
        openWaitingStreams()  // fails them: they go to another connection
        closeIfRetiredAndIdle()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            // A stream not (or no longer) open is left alone by `update` and `complete`.
            streams.update(frame.streamID) { stream in
                // One pass, names compared as they are: HTTP/2 header names are lower case.
                for header in headers.headers {
                    if header.name == ":status" {
                        // 1xx answers are interim; the final HEADERS follow.
                        if let status = Int(header.value), status >= 200 { stream.status = status }
                    } else if reading.keptHeaders.contains(header.name), stream.headers.count < Self.keptHeadersPerAnswer {
                        stream.headers.append((header.name, header.value))
                    }
                }
            }
            if headers.endStream { complete(frame.streamID) }
        case .data(let payload):
            if case .byteBuffer(let buffer) = payload.data, buffer.readableBytes > 0 {
                let limit = reading.bodyLimit
                var full = false
                streams.update(frame.streamID) { stream in
                    let kept = stream.body?.readableBytes ?? 0
                    let slice = buffer.getSlice(at: buffer.readerIndex, length: min(buffer.readableBytes, limit - kept))!
                    if stream.body == nil {
                        stream.body = slice
                    } else {
                        var slice = slice
                        stream.body!.writeBuffer(&slice)
                    }
                    full = stream.body!.readableBytes >= limit && !payload.endStream
                }
                if full {
                    // The answer is read as far as it will be: it completes now, and the
                    // stream is reset (`channelReadComplete`) so that the server stops
                    // sending what nobody reads, and stops using the connection's window.
                    complete(frame.streamID)
                    cutShort.append(frame.streamID)
                }
            }
            if payload.endStream { complete(frame.streamID) }
        case .rstStream(let code):
            fail(frame.streamID, with: NIOHTTP2Errors.streamClosed(streamID: frame.streamID, errorCode: code))
        case .settings(.settings(let settings)):
            if let limit = settings.last(where: { $0.parameter == .maxConcurrentStreams }) {
                serverStreamLimit = limit.value
                gauge?.setStreamLimit(min(maximumOpenStreams, serverStreamLimit))
            }
            if !serverSettingsReceived {
                serverSettingsReceived = true
                settingsTimer?.cancel()
                settingsTimer = nil
                tellReadiness(.success(()))
                noteIdleIfSo()
            }
        case .goAway(let lastStreamID, _, _):
            // Streams above the last one the server processed were never seen: safe to send again
            // elsewhere, like the requests still waiting here. The others finish, then it closes.
            closeWhenIdle = true
            goingAway()
            for id in streams.streamIDs where id > lastStreamID { fail(id, with: HTTP2ConnectionError.closedBeforeSending) }
            closeIfRetiredAndIdle()
        default:
            break
        }
    }

    /// Every stream's end and every DATA frame's window change come here: one cast each, in
    /// the order of how often they come.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let closed = event as? StreamClosedEvent {
            if streams.contains(closed.streamID) { fail(closed.streamID, with: HTTP2ConnectionError.streamClosed) }
        } else if let window = event as? NIOHTTP2WindowUpdatedEvent {
            if window.streamID == .rootStream, let inbound = window.inboundWindowSize { unacknowledgedBytes = Self.connectionWindow - inbound }
        } else if case TLSUserEvent.handshakeCompleted(let negotiated) = event, negotiated != "h2" {
            // A server that did not choose h2 in ALPN speaks HTTP/1.1 (or nothing we know): the
            // connection ends before a frame is read, and the caller may use HTTP/1.1 instead.
            endConnection(streamsFailWith: HTTP2ConnectionError.http2NotOffered, cause: HTTP2ConnectionError.http2NotOffered)
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Errors of one stream end that stream; anything else ends the connection (every
        // request in flight is retried elsewhere).
        switch error {
        case let streamError as NIOHTTP2Errors.StreamError: fail(streamError.streamID, with: streamError.baseError)
        case let closed as NIOHTTP2Errors.StreamClosed: fail(closed.streamID, with: closed)
        case let missing as NIOHTTP2Errors.NoSuchStream: fail(missing.streamID, with: missing)
        default:
            endConnection(streamsFailWith: error, cause: error)
            context.close(promise: nil)
        }
    }

    /// Streams that finished during this read make room for waiting requests: opened here,
    /// once per read, so they share one flush.
    ///
    /// The receive window is given back here too, not while a frame is read: a write makes
    /// NIOHTTP2 deliver pending stream-closed events, which would then arrive before the frame
    /// that completes the stream had been handled.
    func channelReadComplete(context: ChannelHandlerContext) {
        if !cutShort.isEmpty {
            for id in cutShort { context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil) }
            cutShort.removeAll(keepingCapacity: true)
            context.flush()
        }
        if unacknowledgedBytes >= Self.windowUpdateThreshold {
            context.writeAndFlush(
                wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledgedBytes))),
                promise: nil
            )
            unacknowledgedBytes = 0
        }
        if !waiting.isEmpty { openWaitingStreams() }
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        endConnection(streamsFailWith: HTTP2ConnectionError.streamClosed, cause: nil)
        context.fireChannelInactive()
    }

    private func complete(_ id: HTTP2StreamID) {
        guard let stream = streams.removeValue(for: id) else { return }
        // Answers come mostly in order: dropping finished streams from the front keeps the list short.
        while let first = deadlines.first, !streams.contains(first.stream) { deadlines.removeFirst() }
        if let status = stream.status {
            stream.continuation.resume(returning: HTTP2Answer(status: status, headers: stream.headers, body: stream.body))
        } else {
            stream.continuation.resume(throwing: HTTP2ConnectionError.malformedResponse)
        }
        closeIfRetiredAndIdle()
    }

    private func fail(_ id: HTTP2StreamID, with error: any Error) {
        guard let stream = streams.removeValue(for: id) else { return }
        stream.continuation.resume(throwing: error)
        closeIfRetiredAndIdle()
    }

    /// Streams sent fail with `error`: APNs may have seen them, so they are retried as delivery
    /// attempts. Requests not sent yet fail with `cause` when the connection broke (a TLS or
    /// protocol error the operator must see) and otherwise move to another connection.
    private func endConnection(streamsFailWith error: any Error, cause: (any Error)?) {
        goingAway()
        closeWhenIdle = true
        if failure == nil { failure = cause }
        tellReadiness(.failure(cause ?? error))
        settingsTimer?.cancel()
        settingsTimer = nil
        idleTimer?.cancel()
        idleTimer = nil
        let open = streams.removeAll()
        deadlines.removeAll()
        timer?.cancel()
        timer = nil
        timerDeadline = nil
        for stream in open { stream.continuation.resume(throwing: error) }
        openWaitingStreams()
    }

    private func closeIfRetiredAndIdle() {
        if closeWhenIdle, streams.isEmpty {
            context?.close(promise: nil)
        } else {
            noteIdleIfSo()
        }
    }

    /// Starts the idle clock when the last stream closed with nothing waiting. One timer at a
    /// time: it is not cancelled when streams open again, only finds the connection busy.
    private func noteIdleIfSo() {
        guard let timeout = gauge?.idleTimeout, streams.isEmpty, waiting.isEmpty, !closeWhenIdle, idleSince == nil else { return }
        let now = NIODeadline.now()
        idleSince = now
        if idleTimer == nil { scheduleIdleCheck(at: now + TimeAmount(timeout)) }
    }

    private func scheduleIdleCheck(at deadline: NIODeadline) {
        guard let context else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        idleTimer = context.eventLoop.scheduleTask(deadline: deadline) { loopBound.value.checkIdle() }
    }

    /// Idle for the whole timeout: the pool decides whether this connection goes. When it
    /// keeps it (a request was being handed to it), the clock starts again: a connection that
    /// then stays idle is asked about once more, not forgotten.
    private func checkIdle() {
        idleTimer = nil
        guard let since = idleSince, let gauge, let timeout = gauge.idleTimeout, !closeWhenIdle else { return }
        let now = NIODeadline.now()
        let due = since + TimeAmount(timeout)
        if due <= now {
            gauge.onIdle(gauge)
            guard !closeWhenIdle else { return }
            idleSince = now
            scheduleIdleCheck(at: now + TimeAmount(timeout))
        } else {
            scheduleIdleCheck(at: due)
        }
    }

    /// The one timer fires at the earliest deadline of a request waiting or on a stream.
    private func arm(for deadline: NIODeadline) {
        guard let context else { return }
        if let timer, let armed = timerDeadline {
            guard deadline < armed else { return }
            timer.cancel()
        }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: deadline) { loopBound.value.expire() }
        timerDeadline = deadline
    }

    /// Fails the streams past their deadline and resets them, so the server stops working on
    /// them, and the requests past theirs still waiting for a stream; then arms the timer for
    /// the earliest deadline left. Deadlines are in no particular order, so all are looked at
    /// (this runs once per deadline, not per request).
    private func expire() {
        timer = nil
        timerDeadline = nil
        let now = NIODeadline.now()
        var earliest: NIODeadline?
        if !waiting.isEmpty {
            var left = CircularBuffer<HTTP2StreamRequest>(initialCapacity: waiting.count)
            while let request = waiting.popFirst() {
                if request.deadline <= now {
                    request.continuation.resume(throwing: HTTP2ConnectionError.timedOut)
                } else {
                    left.append(request)
                    earliest = min(earliest ?? request.deadline, request.deadline)
                }
            }
            waiting = left
        }
        var open = CircularBuffer<(stream: HTTP2StreamID, deadline: NIODeadline)>(initialCapacity: deadlines.count)
        while let entry = deadlines.popFirst() {
            guard streams.contains(entry.stream) else { continue }
            if entry.deadline <= now {
                // Failed before the reset is written: writing it delivers NIOHTTP2's stream-closed
                // event at once, which would fail the stream as closed before an answer instead.
                fail(entry.stream, with: HTTP2ConnectionError.timedOut)
                context?.write(wrapOutboundOut(HTTP2Frame(streamID: entry.stream, payload: .rstStream(.cancel))), promise: nil)
            } else {
                open.append(entry)
                earliest = min(earliest ?? entry.deadline, entry.deadline)
            }
        }
        deadlines = open
        context?.flush()
        if let earliest { arm(for: earliest) }
        openWaitingStreams()
    }
}

/// A request on its way to the connection's event loop.
struct HTTP2StreamRequest: Sendable {
    var headers: HPACKHeaders
    var body: ByteBuffer
    var deadline: NIODeadline
    var continuation: HTTP2Completion
}

enum HTTP2ConnectionError: Error, CustomStringConvertible {
    case timedOut, streamClosed, malformedResponse, noServerSettings
    /// TCP, TLS and the server's SETTINGS did not all happen within the request timeout.
    case notReady
    /// The server's TLS did not choose `h2` by ALPN.
    case http2NotOffered
    /// The request never reached the server: the connection was closing, out of stream ids, or
    /// the server's GOAWAY said it did not process the stream. Safe to send on another connection.
    case closedBeforeSending

    var description: String {
        switch self {
        case .timedOut: "no answer within the request timeout"
        case .streamClosed: "the HTTP/2 stream or connection closed before an answer"
        case .malformedResponse: "the server answered without a status"
        case .noServerSettings: "the server sent no HTTP/2 SETTINGS before the request timeout"
        case .notReady: "no connection ready (TCP, TLS, the server's HTTP/2 SETTINGS) within the request timeout"
        case .http2NotOffered: "the server did not offer HTTP/2 (ALPN h2)"
        case .closedBeforeSending: "the connection closed before the request was sent (GOAWAY, out of stream ids, connection lost)"
        }
    }
}
