import NIOCore

/// A stream's answer as its connection read it: the status, the headers its caller asked to
/// keep (`HTTP2Connection.Reading`), and at most `bodyLimit` bytes of the body. What the
/// answer means is the provider's to say (`APNsResponse`, `WebPushResponse`).
struct HTTP2Answer: Sendable {
    var status: Int
    /// The kept headers in the order they came; names are lower case, as HTTP/2 sends them.
    var headers: [(name: String, value: String)] = []
    var body: ByteBuffer?

    /// The first value of a kept header.
    func first(_ name: String) -> String? { headers.first { $0.name == name }?.value }
    /// The last value of a kept header.
    func last(_ name: String) -> String? { headers.last { $0.name == name }?.value }

    var bodyBytes: [UInt8] { body.map { Array($0.readableBytesView) } ?? [] }
}
