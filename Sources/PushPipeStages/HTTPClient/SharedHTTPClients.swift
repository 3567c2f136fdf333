import AsyncHTTPClient
import NIOCore
import NIOPosix
import NIOSSL
import PushPipeCore
import Synchronization

/// HTTP clients that live as long as the process, one per set of extra trusted CAs, like
/// `HTTPClient.shared`: stages that only make plain requests (a poller) need no lifecycle of
/// their own, and a pipeline reloaded with the same CA file keeps its pooled connections.
package enum SharedHTTPClients {
    private static let clients = Mutex<[String: HTTPClient]>([:])
    /// The loop every shared client runs its connections on; pollers run their checks on it
    /// (`executor`), so a response resumes the check on the thread that read it.
    private static let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
    package static let executor = EventLoopGroupTaskExecutor(eventLoop)
    private static let systemRootsOnly = HTTPClient(eventLoopGroup: eventLoop, configuration: configuration(tls: nil))

    /// The client trusting the system's roots and, when `caFile` is not empty, the PEM
    /// certificates in it (verification stays on).
    package static func client(trusting caFile: String) -> HTTPClient {
        guard !caFile.isEmpty else { return systemRootsOnly }
        return clients.withLock { clients in
            if let existing = clients[caFile] { return existing }
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(caFile)]
            let client = HTTPClient(eventLoopGroup: eventLoop, configuration: configuration(tls: tls))
            clients[caFile] = client
            return client
        }
    }

    private static let egressClients = Mutex<[String: HTTPClient]>([:])

    /// A client for URLs users chose (`EgressHTTPClient`): redirects are never followed, and with
    /// `checkingPeers` every new connection's peer must be a public address, and a refused
    /// connection fails its requests at once instead of being tried again until their deadline.
    static func egressClient(trusting caFile: String, checkingPeers: Bool) -> HTTPClient {
        egressClients.withLock { clients in
            let key = "\(checkingPeers) \(caFile)"
            if let existing = clients[key] { return existing }
            var tls: TLSConfiguration?
            if !caFile.isEmpty {
                tls = TLSConfiguration.makeClientConfiguration()
                tls?.additionalTrustRoots = [.file(caFile)]
            }
            var configuration = configuration(tls: tls)
            configuration.redirectConfiguration = .disallow
            if checkingPeers {
                configuration.http1_1ConnectionDebugInitializer = EgressHTTPClient.refuseNonPublicPeer
                configuration.http2ConnectionDebugInitializer = EgressHTTPClient.refuseNonPublicPeer
                configuration.connectionPool.retryConnectionEstablishment = false
            }
            let client = HTTPClient(eventLoopGroup: eventLoop, configuration: configuration)
            clients[key] = client
            return client
        }
    }

    /// `HTTPClient.shared`'s configuration without what a poller pays for per request and
    /// never uses: tracing (with no tracer bootstrapped the client still makes a no-op span and
    /// its attributes for every request), an idle-read timer (every request has a deadline
    /// of its own, shorter) and a decompressor in every connection's pipeline (requests do not
    /// ask for compressed bodies).
    private static func configuration(tls: TLSConfiguration?) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        if let tls { configuration.tlsConfiguration = tls }
        configuration.tracing.tracer = nil
        configuration.timeout.read = nil
        configuration.decompression = .disabled
        return configuration
    }
}
