import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

@testable import PushPipeHTTP

/// The request timeout on a connection, in the loop's own time (`EmbeddedEventLoop`): counted
/// from the connection's start or its last response to a request's end, never while a
/// request is answered, and moved by every answer although its timer is not.
@Suite struct RequestTimeoutHandlerTests {
    func request(_ channel: EmbeddedChannel) throws {
        try channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: "/events")))
        try channel.writeInbound(HTTPRequestPart.end(nil))
    }

    func answer(_ channel: EmbeddedChannel) throws {
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .accepted)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
    }

    @Test func answersMoveTheDeadlineAndAnsweringIsNeverTimed() throws {
        let channel = EmbeddedChannel(handler: RequestTimeoutHandler(timeout: .seconds(10)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(channel.isActive, "within the first request's time")
        try request(channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(channel.isActive, "answering for 5 s past the first deadline: a slow pipeline is not the client's fault")
        try answer(channel)  // t = 14: the next request is due by 24
        channel.embeddedEventLoop.advanceTime(by: .seconds(6))
        try request(channel)
        try answer(channel)  // t = 20: by 30, though a timer for 24 is set
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(channel.isActive, "t = 25: the timer for 24 waited again for 30")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(4_900))
        #expect(channel.isActive, "t = 29.9")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(200))
        #expect(!channel.isActive, "t = 30.1: no request came whole in 10 s after the last answer")
    }

    /// A 404 goes out before the request's body has come; the body's end must not count as a
    /// request still to answer, or the connection is never timed again (found by review: an
    /// unauthenticated way around the slowloris bound, older than the lazy timer).
    @Test func anAnswerBeforeItsRequestEndsLeavesTheConnectionTimed() throws {
        let channel = EmbeddedChannel(handler: RequestTimeoutHandler(timeout: .seconds(10)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: "/nowhere")))
        try answer(channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        try channel.writeInbound(HTTPRequestPart.end(nil))  // the body drained after the 404
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(9_900))
        #expect(channel.isActive, "the next request has 10 s from the body's end")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(200))
        #expect(!channel.isActive, "then idle, or trickling, it is closed")
        // And one answered in turn after such a request is timed as usual.
        let again = EmbeddedChannel(handler: RequestTimeoutHandler(timeout: .seconds(10)))
        try again.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try again.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: "/nowhere")))
        try answer(again)
        try again.writeInbound(HTTPRequestPart.end(nil))
        try request(again)
        again.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(again.isActive, "the second request is being answered")
        try answer(again)
        again.embeddedEventLoop.advanceTime(by: .milliseconds(10_100))
        #expect(!again.isActive)
    }

    @Test func aRequestThatNeverEndsIsClosedAtTheTimeout() throws {
        let channel = EmbeddedChannel(handler: RequestTimeoutHandler(timeout: .seconds(10)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: "/events")))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(9_900))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(200))
        #expect(!channel.isActive, "its head came, its end never did")
    }
}
