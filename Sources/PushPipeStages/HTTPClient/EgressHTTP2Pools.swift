import NIOCore
import NIOHTTP2
import NIOSSL
import PushPipeCore
import Synchronization

/// HTTP/2 connections to origins users chose (Web Push services), one pool per origin, under
/// the egress policy: each connection goes to an address that was resolved and checked for it,
/// never to the name resolved again (a name that answers a public address and then 10.0.0.5
/// cannot slip in between). An origin that does not choose h2 is remembered for an hour and
/// left to `EgressHTTPClient`'s HTTP/1.1.
///
/// Anyone can run an origin, so what they hold is bounded: at most `maximumOrigins` pools of one
/// connection each (the least recently used makes way), closed after `idleTimeout` unused.
final class EgressHTTP2Pools: Sendable {
    enum Route {
        case http2(HTTP2ConnectionPool)
        /// The origin speaks HTTP/1.1 only (or h2 failed it lately): `EgressHTTPClient`.
        case http1
    }

    let policy: EgressPolicy
    let reading: HTTP2Connection.Reading
    let tls: NIOSSLContext
    /// The request timeout: a connection not ready in it fails (TCP, TLS, the server's SETTINGS).
    let readyTimeout: TimeAmount
    let maximumOrigins: Int
    let idleTimeout: Duration
    /// Streams a connection may have open, lowered by the server's SETTINGS.
    let maximumOpenStreams: Int
    private let now: @Sendable () -> ContinuousClock.Instant

    private struct Entry {
        var pool: HTTP2ConnectionPool?
        var http1Until: ContinuousClock.Instant?
        var lastUsed: ContinuousClock.Instant
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var nextSweep: ContinuousClock.Instant
        /// After `shutdown` (the pipeline stopped) a late send opens no connection nobody would
        /// close: it goes by HTTP/1.1, whose client lives as long as the process.
        var closed = false
    }

    private let state: Mutex<State>

    static let http1Memory: Duration = .seconds(3600)

    init(
        policy: EgressPolicy,
        caFile: String,
        reading: HTTP2Connection.Reading,
        readyTimeout: TimeAmount,
        maximumOrigins: Int = 64,
        idleTimeout: Duration = .seconds(120),
        maximumOpenStreams: Int = 100,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) throws {
        self.policy = policy
        self.reading = reading
        self.readyTimeout = readyTimeout
        self.maximumOrigins = maximumOrigins
        self.idleTimeout = idleTimeout
        self.maximumOpenStreams = maximumOpenStreams
        self.now = now
        tls = try HTTP2ConnectionPool.tlsContext(caFile: caFile, http1: true)
        state = Mutex(State(nextSweep: now() + idleTimeout))
    }

    /// Origins with a pool now.
    var pooledOrigins: Int { state.withLock { $0.entries.values.count { $0.pool != nil } } }

    /// How to send to `origin` (as `EgressPolicy.check(url:)` returned it) at `host:port`.
    func route(origin: String, host: String, port: Int) -> Route {
        let current = now()
        let (route, retired) = state.withLock { state -> (Route, [HTTP2ConnectionPool]) in
            if state.closed { return (.http1, []) }
            var retired = sweep(&state, at: current)
            if var entry = state.entries[origin] {
                entry.lastUsed = current
                defer { state.entries[origin] = entry }
                if let until = entry.http1Until, until > current { return (.http1, retired) }
                entry.http1Until = nil
                if let pool = entry.pool { return (.http2(pool), retired) }
                let pool = makePool(origin: origin, host: host, port: port)
                entry.pool = pool
                return (.http2(pool), retired)
            }
            if state.entries.count >= maximumOrigins, let oldest = state.entries.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                state.entries[oldest.key] = nil
                if let pool = oldest.value.pool { retired.append(pool) }
            }
            let pool = makePool(origin: origin, host: host, port: port)
            state.entries[origin] = Entry(pool: pool, lastUsed: current)
            return (.http2(pool), retired)
        }
        for pool in retired { pool.retireAll() }
        return route
    }

    /// The origin's server did not choose h2: HTTP/1.1 for it for an hour.
    func useHTTP1(for origin: String) {
        let current = now()
        let pool = state.withLock { state -> HTTP2ConnectionPool? in
            // Remembered even when the origin made way for others since its handshake.
            var entry = state.entries[origin] ?? Entry(lastUsed: current)
            defer { state.entries[origin] = entry }
            entry.http1Until = current + Self.http1Memory
            return entry.pool.take()
        }
        pool?.retireAll()
    }

    /// Closes every connection at once (the pipeline stops); which origins speak HTTP/1.1
    /// only is kept.
    func shutdown() async {
        let pools = state.withLock { state in
            state.closed = true
            defer { state.entries = state.entries.filter { $0.value.http1Until != nil } }
            return state.entries.values.compactMap(\.pool)
        }
        await withTaskGroup(of: Void.self) { group in
            for pool in pools { group.addTask { await pool.shutdown() } }
        }
    }

    /// Retires the pools unused for `idleTimeout`; looked at no more than once per `idleTimeout`.
    private func sweep(_ state: inout State, at current: ContinuousClock.Instant) -> [HTTP2ConnectionPool] {
        guard current >= state.nextSweep else { return [] }
        state.nextSweep = current + idleTimeout
        var retired: [HTTP2ConnectionPool] = []
        for (origin, var entry) in state.entries where current - entry.lastUsed >= idleTimeout {
            if let pool = entry.pool.take() { retired.append(pool) }
            // An origin without h2 is remembered for its hour, idle or not.
            if let until = entry.http1Until, until > current {
                state.entries[origin] = entry
            } else {
                state.entries[origin] = nil
            }
        }
        return retired
    }

    private func makePool(origin: String, host: String, port: Int) -> HTTP2ConnectionPool {
        var resolve: (@Sendable () async throws -> [SocketAddress])?
        if !policy.privateOrigins.contains(origin) {
            let policy = self.policy
            resolve = {
                try await policy.checkedAddresses(of: host, port: port, origin: origin).map {
                    try SocketAddress(ipAddress: $0.description, port: port)
                }
            }
        }
        return HTTP2ConnectionPool(
            host: host,
            port: port,
            keptConnections: 1,
            maximumConnections: 1,
            idleTimeout: idleTimeout,
            readyTimeout: readyTimeout,
            maximumOpenStreams: maximumOpenStreams,
            lastUsableStreamID: HTTP2StreamHandler.defaultLastUsableStreamID,
            tls: tls,
            reading: reading,
            resolve: resolve
        )
    }
}
