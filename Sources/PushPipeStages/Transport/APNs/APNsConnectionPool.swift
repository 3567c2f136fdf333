import Foundation
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// A small, fixed number of long-lived connections, used round-robin. A connection that
/// dropped or received GOAWAY is replaced on its next use; concurrent callers share one
/// connection attempt.
final class APNsConnectionPool: Sendable {
    let host: String
    let port: Int
    let serverHostname: String?
    let tls: NIOSSLContext
    let maximumOpenStreams: Int
    let lastUsableStreamID: HTTP2StreamID
    let group: any EventLoopGroup
    private let slots: Mutex<[Slot]>
    private let next = Atomic<Int>(0)

    enum Slot: Sendable {
        case empty
        case connecting(EventLoopFuture<APNsConnection>)
        case ready(APNsConnection)
    }

    init(host: String, port: Int, size: Int, maximumOpenStreams: Int, lastUsableStreamID: HTTP2StreamID, tls: NIOSSLContext,
         group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.host = host
        self.maximumOpenStreams = maximumOpenStreams
        self.lastUsableStreamID = lastUsableStreamID
        self.port = port
        self.tls = tls
        self.group = group
        // SNI and name checks need a host name; an IP literal is checked against IP SANs instead.
        serverHostname = host.first?.isNumber == true || host.contains(":") ? nil : host
        slots = Mutex(Array(repeating: .empty, count: max(1, size)))
    }

    /// Connections up and taking requests.
    var openConnections: Int {
        slots.withLock { slots in
            slots.reduce(0) { count, slot in
                if case .ready(let connection) = slot, connection.isUsable { return count + 1 }
                return count
            }
        }
    }

    func connection() async throws -> APNsConnection {
        let count = slots.withLock { $0.count }
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue % count
        let attempt = slots.withLock { slots -> Result<APNsConnection, Never>? in
            switch slots[index] {
            case .ready(let connection) where connection.isUsable:
                return .success(connection)
            case .connecting:
                return nil
            case .ready, .empty:
                slots[index] = .connecting(APNsConnection.connect(host: host, port: port, tls: tls, serverHostname: serverHostname,
                                                                         maximumOpenStreams: maximumOpenStreams,
                                                                         lastUsableStreamID: lastUsableStreamID, group: group))
                return nil
            }
        }
        if case .success(let connection) = attempt { return connection }
        guard case .connecting(let future) = slots.withLock({ $0[index] }) else { return try await connection() }
        do {
            let connection = try await future.get()
            slots.withLock { slots in
                if case .connecting(let pending) = slots[index], pending === future { slots[index] = .ready(connection) }
            }
            return connection
        } catch {
            slots.withLock { slots in
                if case .connecting(let pending) = slots[index], pending === future { slots[index] = .empty }
            }
            throw error
        }
    }

    /// Stops using a connection (GOAWAY, IdleTimeout, UnrelatedKeyIdInToken); the next request reconnects.
    func retire(_ connection: APNsConnection) {
        connection.retire()
    }

    func shutdown() async {
        let current = slots.withLock { slots in
            defer { slots = Array(repeating: .empty, count: slots.count) }
            return slots
        }
        for slot in current {
            switch slot {
            case .ready(let connection): try? await connection.channel.close()
            case .connecting(let future): try? await future.get().channel.close()
            case .empty: break
            }
        }
    }
}
