import Hummingbird
import NIOCore

/// A request's context on the app listener: Hummingbird's, and the peer's address, which the
/// routes' per-client limits count by.
struct ClientRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The peer's IP address as text (`127.0.0.1`, `::1`), nil on a Unix socket.
    let peer: String?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peer = source.channel.remoteAddress?.ipAddress
    }
}
