import NIOCore
import NIOEmbedded
import NIOHTTP2
import NIOTLS
import Testing

@testable import PushPipeStages

/// The connect's callback asks a handler for its readiness once the TCP connect completed; on a
/// busy loop the server may have answered by then (its SETTINGS, or a TLS handshake that did
/// not choose h2). The handler tells what already happened at once: left waiting, the caller
/// gave up after the ready timeout and counted a failure, or tried HTTP/2 on an HTTP/1.1
/// service again.
@Suite struct HTTP2StreamHandlerTests {
    static func handler(_ gauge: HTTP2ConnectionGauge = HTTP2ConnectionGauge(maximumOpenStreams: 10)) -> HTTP2StreamHandler {
        HTTP2StreamHandler(gauge: gauge, settingsTimeout: .seconds(30), reading: WebPushResponse.reading)
    }

    @Test func aRefusalOfH2BeforeTheCallbackIsToldAtOnce() throws {
        let gauge = HTTP2ConnectionGauge(maximumOpenStreams: 10)
        let handler = Self.handler(gauge)
        let channel = EmbeddedChannel(handler: handler)
        channel.pipeline.fireUserInboundEventTriggered(TLSUserEvent.handshakeCompleted(negotiatedProtocol: "http/1.1"))
        var told: Result<Void, any Error>?
        handler.whenReady { told = $0 }
        #expect(gauge.isGoingAway, "the pool sees the connection going")
        guard case .failure(HTTP2ConnectionError.http2NotOffered) = told else {
            Issue.record("told \(String(describing: told))")
            return
        }
    }

    /// And the stream limit those SETTINGS gave reaches the pool, which chooses by it.
    @Test func settingsBeforeTheCallbackAreToldAtOnce() throws {
        let gauge = HTTP2ConnectionGauge(maximumOpenStreams: 10)
        let handler = Self.handler(gauge)
        let channel = EmbeddedChannel(handler: handler)
        try channel.writeInbound(
            HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: 3)])))
        )
        #expect(gauge.streamLimit == 10, "nothing reported before the connect's callback")
        var told: Result<Void, any Error>?
        handler.whenReady { told = $0 }
        guard case .success = told else {
            Issue.record("told \(String(describing: told))")
            return
        }
        #expect(gauge.streamLimit == 3)
        #expect(!gauge.isGoingAway)
        _ = try? channel.finish()
    }
}
