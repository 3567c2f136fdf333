import AsyncHTTPClient
import NIOSSL
import Synchronization

/// HTTP clients that live as long as the process, one per set of extra trusted CAs, like
/// `HTTPClient.shared`: stages that only make plain requests (a poller) need no lifecycle of
/// their own, and a pipeline reloaded with the same CA file keeps its pooled connections.
enum SharedHTTPClients {
    private static let clients = Mutex<[String: HTTPClient]>([:])

    /// The client trusting the system's roots and, when `caFile` is not empty, the PEM
    /// certificates in it (verification stays on).
    static func client(trusting caFile: String) -> HTTPClient {
        guard !caFile.isEmpty else { return HTTPClient.shared }
        return clients.withLock { clients in
            if let existing = clients[caFile] { return existing }
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(caFile)]
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(tlsConfiguration: tls))
            clients[caFile] = client
            return client
        }
    }
}
