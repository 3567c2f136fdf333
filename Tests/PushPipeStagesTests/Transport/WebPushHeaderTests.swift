import NIOCore
import NIOHPACK
import PushPipeCore
import Testing

@testable import PushPipeStages

/// What a Web Push request's fields cost on a connection that carries every subscription of a
/// push service: the VAPID header (a JWT of 300 bytes, the same for hours) stays in the HPACK
/// table however many subscriptions' paths, and events' TTLs and topics, went by.
@Suite struct WebPushHeaderTests {
    static let authorization =
        "vapid t=" + String(repeating: "eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9", count: 7) + ", k=" + String(repeating: "B", count: 87)

    static func sealed(_ id: Int) throws -> WebPushTransport.Sealed {
        let endpoint = "https://push.example.net/wpush/v2/gAAAAABm\(id)" + String(repeating: "Xk9", count: 40)
        return WebPushTransport.Sealed(
            url: endpoint,
            checkedOrigin: .success("https://push.example.net"),
            target: try #require(WebPushSubscriptionCache.Target(endpoint)),
            headers: [
                ("ttl", String(86400 - id)), ("urgency", "normal"), ("content-encoding", "aes128gcm"), ("topic", "order-\(id)"),
                ("authorization", authorization),
            ],
            body: ByteBuffer(repeating: 0, count: 303 + id % 7)
        )
    }

    @Test func theVAPIDHeaderStaysIndexedWhileSubscriptionsGoBy() throws {
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        func encodedBytes(_ sealed: WebPushTransport.Sealed) throws -> Int {
            var buffer = ByteBuffer()
            try encoder.encode(headers: sealed.http2Headers, to: &buffer)
            return buffer.readableBytes
        }
        let first = try encodedBytes(Self.sealed(0))
        #expect(first > Self.authorization.utf8.count / 2, "the first request carries the header")
        let later = try (1...200).map { try encodedBytes(Self.sealed($0)) }
        // The path (about 140 bytes, Huffman-coded) is sent whole each time; the rest are
        // indexes. A request that carries the VAPID header again is over 400 bytes.
        #expect(later.max() ?? 0 < 250, "requests of \(later.filter { $0 >= 250 }) bytes sent the VAPID header again")
    }
}
