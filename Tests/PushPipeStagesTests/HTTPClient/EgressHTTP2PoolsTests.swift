import Foundation
import PushPipeCore
import PushPipeTesting
import Synchronization
import Testing

@testable import PushPipeStages

/// What origins anyone can run may hold of the process: pools are made on first use (no
/// connection here), at most `maximumOrigins` of them, and those unused for `idleTimeout` go.
@Suite struct EgressHTTP2PoolsTests {
    final class Clock: Sendable {
        let now = Mutex(ContinuousClock.now)
        func advance(_ duration: Duration) { now.withLock { $0 += duration } }
    }

    func pools(maximumOrigins: Int, clock: Clock) throws -> EgressHTTP2Pools {
        try EgressHTTP2Pools(
            policy: .standard,
            caFile: "",
            reading: WebPushResponse.reading,
            readyTimeout: .seconds(5),
            maximumOrigins: maximumOrigins,
            idleTimeout: .seconds(120),
            now: { clock.now.withLock { $0 } }
        )
    }

    func pool(_ route: EgressHTTP2Pools.Route) -> HTTP2ConnectionPool? {
        if case .http2(let pool) = route { return pool }
        return nil
    }

    @Test func theLeastRecentlyUsedOriginMakesWayPastTheCap() throws {
        let clock = Clock()
        let pools = try pools(maximumOrigins: 3, clock: clock)
        var first: [HTTP2ConnectionPool] = []
        for index in 0..<3 {
            first.append(try #require(pool(pools.route(origin: "https://s\(index).example", host: "s\(index).example", port: 443))))
            clock.advance(.seconds(1))
        }
        // s0 used again: s1 is now the least recently used.
        #expect(pool(pools.route(origin: "https://s0.example", host: "s0.example", port: 443)) === first[0])
        for index in 3..<100 {
            clock.advance(.seconds(1))
            _ = pools.route(origin: "https://s\(index).example", host: "s\(index).example", port: 443)
            #expect(pools.pooledOrigins <= 3)
        }
        #expect(pools.pooledOrigins == 3)
        #expect(pool(pools.route(origin: "https://s99.example", host: "s99.example", port: 443)) != nil)
        #expect(pool(pools.route(origin: "https://s0.example", host: "s0.example", port: 443)) !== first[0], "s0 made way and came back anew")
    }

    @Test func originsUnusedForTheIdleTimeoutGo() throws {
        let clock = Clock()
        let pools = try pools(maximumOrigins: 64, clock: clock)
        for index in 0..<10 { _ = pools.route(origin: "https://s\(index).example", host: "s\(index).example", port: 443) }
        #expect(pools.pooledOrigins == 10)
        clock.advance(.seconds(100))
        _ = pools.route(origin: "https://busy.example", host: "busy.example", port: 443)
        #expect(pools.pooledOrigins == 11, "not idle long enough yet")
        clock.advance(.seconds(30))
        _ = pools.route(origin: "https://busy.example", host: "busy.example", port: 443)
        #expect(pools.pooledOrigins == 1, "only the one used within the idle timeout is left")
    }

    @Test func anOriginWithoutH2IsLeftToHTTP1ForAnHour() throws {
        let clock = Clock()
        let pools = try pools(maximumOrigins: 64, clock: clock)
        _ = pools.route(origin: "https://old.example", host: "old.example", port: 443)
        pools.useHTTP1(for: "https://old.example")
        #expect(pool(pools.route(origin: "https://old.example", host: "old.example", port: 443)) == nil)
        #expect(pools.pooledOrigins == 0)
        // Idle past the idle timeout, and swept: the hour is remembered all the same.
        clock.advance(.seconds(1800))
        _ = pools.route(origin: "https://other.example", host: "other.example", port: 443)
        #expect(pool(pools.route(origin: "https://old.example", host: "old.example", port: 443)) == nil)
        clock.advance(.seconds(1801))
        #expect(pool(pools.route(origin: "https://old.example", host: "old.example", port: 443)) != nil, "asked again after the hour")
    }

    /// A pool let go (the least recently used, past the cap) closes its connection once its
    /// streams are done, and opens no other: nobody holds it to close one.
    @Test(.timeLimit(.minutes(1))) func anOriginThatMakesWayClosesItsConnectionAndOpensNoOther() async throws {
        let directory = try TemporaryDirectory("egress-h2")
        defer { directory.remove() }
        let authority = try TestCertificateAuthority()
        try authority.writeCACertificate(to: directory.file("ca.pem"))
        let first = try await WebPushStandIn.start(authority: authority, http2: true)
        let second = try await WebPushStandIn.start(authority: authority, http2: true)
        let pools = try EgressHTTP2Pools(
            policy: EgressPolicy(privateOrigins: [first.origin, second.origin]),
            caFile: directory.file("ca.pem"),
            reading: WebPushResponse.reading,
            readyTimeout: .seconds(20),
            maximumOrigins: 1
        )
        let firstPool = try #require(pool(pools.route(origin: first.origin, host: "localhost", port: first.port)))
        let connection = try await firstPool.connection()
        connection.gauge.remove(1)
        #expect(first.connections == 1)
        _ = pools.route(origin: second.origin, host: "localhost", port: second.port)
        try await connection.channel.closeFuture.get()
        await #expect(throws: HTTP2ConnectionError.self) { _ = try await firstPool.connection() }
        #expect(first.connections == 1)
        await pools.shutdown()
        await first.stop()
        await second.stop()
    }

    @Test(arguments: [
        ("1und1.de", "1und1.de"), ("163.com", "163.com"), ("fcm.googleapis.com", "fcm.googleapis.com"), ("127.0.0.1", nil), ("2001:db8::1", nil),
    ])
    func aNameThatBeginsWithADigitIsStillANameForTLS(host: String, expected: String?) {
        #expect(HTTP2ConnectionPool.serverHostname(for: host) == expected)
    }
}
