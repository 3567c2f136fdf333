import Foundation
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import PushPipeCore
import Synchronization

/// Long-lived connections that grow with the load: `connections` are kept, and more, up to
/// `max_connections`, open while every stream of the open ones is taken.
///
/// Over a real network one connection carries at most its streams per round trip (1,000
/// streams at 150 ms: under 7,000 notifications a second), so a busy daemon needs several; a
/// quiet one needs one, and APNs counts idle connections against the provider. Requests spread
/// over the kept connections by load; the extra ones are filled in order, so that when the load
/// falls the last ones run dry and close after `idle_timeout`. A connection that dropped or
/// received GOAWAY is replaced on its next use; concurrent callers share one connection attempt.
final class HTTP2ConnectionPool: Sendable {
    let host: String
    let port: Int
    let serverHostname: String?
    let tls: NIOSSLContext
    let maximumOpenStreams: Int
    let lastUsableStreamID: HTTP2StreamID
    let group: any EventLoopGroup
    /// Connections kept open whatever the load (the first slots).
    let keptConnections: Int
    let idleTimeout: Duration
    /// A connection that is not ready (TCP, TLS, the server's SETTINGS) in this time fails: the
    /// request timeout, which a caller waiting for it would otherwise overrun.
    let readyTimeout: TimeAmount
    let reading: HTTP2Connection.Reading
    /// Resolves and checks the host for each new connection, when it is one a user chose; nil
    /// lets the connection resolve it.
    let resolve: (@Sendable () async throws -> [SocketAddress])?
    private let slots: Mutex<[Slot]>
    /// Set by `retireAll`: a pool let go opens no connection again (nobody would close it).
    private let retired = Atomic(false)

    enum Slot: Sendable {
        case empty
        case connecting(EventLoopFuture<HTTP2Connection>, HTTP2ConnectionGauge)
        case ready(HTTP2Connection)
    }

    init(
        host: String,
        port: Int,
        keptConnections: Int,
        maximumConnections: Int,
        idleTimeout: Duration,
        readyTimeout: TimeAmount,
        maximumOpenStreams: Int,
        lastUsableStreamID: HTTP2StreamID,
        tls: NIOSSLContext,
        reading: HTTP2Connection.Reading,
        resolve: (@Sendable () async throws -> [SocketAddress])? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.readyTimeout = readyTimeout
        self.reading = reading
        self.resolve = resolve
        self.host = host
        self.maximumOpenStreams = maximumOpenStreams
        self.lastUsableStreamID = lastUsableStreamID
        self.port = port
        self.tls = tls
        self.group = group
        self.keptConnections = max(1, keptConnections)
        self.idleTimeout = idleTimeout
        serverHostname = Self.serverHostname(for: host)
        slots = Mutex(Array(repeating: .empty, count: max(self.keptConnections, maximumConnections)))
    }

    /// SNI and name checks need a host name; an IP literal is checked against IP SANs instead.
    /// A name may begin with a digit (`1und1.de`).
    static func serverHostname(for host: String) -> String? {
        IPAddressBytes(host) == nil ? host : nil
    }

    /// HTTP/2 by ALPN (offering HTTP/1.1 too with `http1`, so that a server without h2 still
    /// completes the handshake and says so), TLS 1.2 or later, trusting `caFile`'s CAs too.
    static func tlsContext(caFile: String, http1: Bool = false) throws -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = http1 ? ["h2", "http/1.1"] : ["h2"]
        tls.minimumTLSVersion = .tlsv12
        if !caFile.isEmpty { tls.additionalTrustRoots = [.file(caFile)] }
        return try NIOSSLContext(configuration: tls)
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

    private enum Choice {
        case use(HTTP2Connection)
        case wait(EventLoopFuture<HTTP2Connection>)
        case retired
    }

    /// A connection with places for `requests` reserved on it: `HTTP2Connection.send` gives them
    /// back. Reserving while choosing, under the pool's lock, keeps a burst of callers from all
    /// seeing the same free streams.
    ///
    /// - Parameter deadline: waiting for a connection to become ready ends there
    ///   (`notReady`); nil waits for it (its own `readyTimeout` bounds it).
    func connection(reserving requests: Int = 1, deadline: NIODeadline? = nil) async throws -> HTTP2Connection {
        var mayGrow = true
        while true {
            switch slots.withLock({ choose(&$0, reserving: requests, mayGrow: mayGrow) }) {
            case .use(let connection):
                return connection
            case .retired:
                throw HTTP2ConnectionError.closedBeforeSending
            case .wait(let future):
                // `startConnecting` records the outcome in the slot before this caller resumes.
                do {
                    try await Self.wait(for: future, until: deadline)
                } catch {
                    let othersOpen = slots.withLock { slots in
                        slots.contains { if case .ready(let connection) = $0 { connection.isUsable } else { false } }
                    }
                    // A connection the load asked for failed: the open ones carry on; no second try now.
                    guard othersOpen else { throw error }
                    mayGrow = false
                }
            }
        }
    }

    private static func wait(for future: EventLoopFuture<HTTP2Connection>, until deadline: NIODeadline?) async throws {
        guard let deadline else {
            _ = try await future.get()
            return
        }
        let bounded = OncePromise(future.eventLoop.makePromise(of: HTTP2Connection.self))
        future.whenComplete { bounded.complete(with: $0) }
        let timer = future.eventLoop.scheduleTask(deadline: deadline) { bounded.complete(with: .failure(HTTP2ConnectionError.notReady)) }
        defer { timer.cancel() }
        _ = try await bounded.futureResult.get()
    }

    /// The least loaded kept connection with a free stream, else the first extra one with a
    /// free stream. With none free, one more connection starts (one at a time) and the caller
    /// waits for it, then chooses again; at `max_connections` the caller waits its turn on the
    /// least loaded one.
    private func choose(_ slots: inout [Slot], reserving requests: Int, mayGrow: Bool) -> Choice {
        if retired.load(ordering: .relaxed) { return .retired }
        var leastLoadedKept: HTTP2Connection?
        var leastLoaded: HTTP2Connection?
        var firstFreeExtra: HTTP2Connection?
        var freeExtraSlot: Int?
        var extraConnecting: EventLoopFuture<HTTP2Connection>?
        var firstConnecting: EventLoopFuture<HTTP2Connection>?
        for index in slots.indices {
            switch slots[index] {
            case .ready(let connection) where connection.isUsable:
                let outstanding = connection.gauge.outstanding
                if leastLoaded.map({ outstanding < $0.gauge.outstanding }) ?? true { leastLoaded = connection }
                if index < keptConnections {
                    if leastLoadedKept.map({ outstanding < $0.gauge.outstanding }) ?? true { leastLoadedKept = connection }
                } else if firstFreeExtra == nil, outstanding < connection.gauge.streamLimit {
                    firstFreeExtra = connection
                }
            case .connecting(let future, _):
                if firstConnecting == nil { firstConnecting = future }
                if index >= keptConnections, extraConnecting == nil { extraConnecting = future }
            case .ready, .empty:
                if index < keptConnections {
                    // Kept connections are always open or opening.
                    let future = startConnecting(in: &slots, at: index)
                    if firstConnecting == nil { firstConnecting = future }
                } else if freeExtraSlot == nil {
                    freeExtraSlot = index
                }
            }
        }
        let chosen: HTTP2Connection
        if let leastLoadedKept, !leastLoadedKept.gauge.isSaturated {
            chosen = leastLoadedKept
        } else if let firstFreeExtra {
            chosen = firstFreeExtra
        } else if let leastLoaded {
            // Every open connection has all its streams taken.
            if mayGrow, let extraConnecting { return .wait(extraConnecting) }
            if mayGrow, let index = freeExtraSlot { return .wait(startConnecting(in: &slots, at: index)) }
            chosen = leastLoaded
        } else if let firstConnecting {
            return .wait(firstConnecting)
        } else {
            // Kept slots are never left empty above, and there is at least one: not reached.
            return .wait(startConnecting(in: &slots, at: 0))
        }
        chosen.gauge.add(requests)
        return .use(chosen)
    }

    private func startConnecting(in slots: inout [Slot], at index: Int) -> EventLoopFuture<HTTP2Connection> {
        let extra = index >= keptConnections
        let gauge = HTTP2ConnectionGauge(
            maximumOpenStreams: maximumOpenStreams,
            idleTimeout: extra ? idleTimeout : nil,
            onIdle: { [weak self] gauge in self?.closeIdle(slot: index, gauge: gauge) }
        )
        var addresses: EventLoopFuture<[SocketAddress]>?
        if let resolve {
            let promise = group.next().makePromise(of: [SocketAddress].self)
            promise.completeWithTask { try await resolve() }
            addresses = promise.futureResult
        }
        let future = HTTP2Connection.connect(
            host: host,
            port: port,
            addresses: addresses,
            tls: tls,
            serverHostname: serverHostname,
            gauge: gauge,
            readyTimeout: readyTimeout,
            reading: reading,
            lastUsableStreamID: lastUsableStreamID,
            group: group
        )
        slots[index] = .connecting(future, gauge)
        // Also recorded when no caller waits for it (it was started for the load to come).
        future.whenComplete { [weak self] result in
            self?.slots.withLock { slots in
                guard case .connecting(let pending, _) = slots[index], pending === future else { return }
                switch result {
                case .success(let connection): slots[index] = .ready(connection)
                case .failure: slots[index] = .empty
                }
            }
        }
        return future
    }

    /// An extra connection idle for `idle_timeout` closes, unless a request was handed to it
    /// meanwhile.
    private func closeIdle(slot index: Int, gauge: HTTP2ConnectionGauge) {
        let idle = slots.withLock { slots -> HTTP2Connection? in
            guard case .ready(let connection) = slots[index], connection.gauge === gauge, gauge.outstanding == 0 else { return nil }
            slots[index] = .empty
            return connection
        }
        idle?.retire()
    }

    /// Stops using a connection (GOAWAY, IdleTimeout, UnrelatedKeyIdInToken); the next request reconnects.
    func retire(_ connection: HTTP2Connection) {
        connection.retire()
    }

    /// Stops using every connection and the pool: streams in flight finish, then each
    /// connection closes; requests that still come fail with `closedBeforeSending` (the caller
    /// finds another pool).
    func retireAll() {
        for slot in letGo() {
            switch slot {
            case .ready(let connection): connection.retire()
            case .connecting(let future, _): future.whenSuccess { $0.retire() }
            case .empty: break
            }
        }
    }

    /// Empties the slots and marks the pool retired, under one lock: a caller waiting for a
    /// connection of this pool opens none after it (nobody would close it).
    private func letGo() -> [Slot] {
        slots.withLock { slots in
            retired.store(true, ordering: .relaxed)
            defer { slots = Array(repeating: .empty, count: slots.count) }
            return slots
        }
    }

    func shutdown() async {
        let current = letGo()
        for slot in current {
            switch slot {
            case .ready(let connection): try? await connection.channel.close()
            case .connecting(let future, _): try? await future.get().channel.close()
            case .empty: break
            }
        }
    }
}
