import AsyncHTTPClient
import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

@testable import PushPipeStages

/// The egress client's connection check, on its own. A name may resolve to a
/// public address when it is checked and to a private one when the client connects (DNS
/// rebinding): the peer of every new connection is checked again, and a refused one carries
/// no request.
@Suite struct EgressHTTPClientTests {
    @Test func aConnectionToAPrivatePeerCarriesNoRequest() async throws {
        let directory = try TemporaryDirectory("egress")
        defer { directory.remove() }
        let authority = try TestCertificateAuthority()
        try authority.writeCACertificate(to: directory.file("ca.pem"))
        let standIn = try await WebPushStandIn.start(authority: authority)
        let subscription = standIn.subscribe("b1")
        let client = SharedHTTPClients.egressClient(trusting: directory.file("ca.pem"), checkingPeers: true)
        var request = HTTPClientRequest(url: try #require(subscription["endpoint"]?.stringValue))
        request.method = .POST
        let started = ContinuousClock.now
        await #expect(throws: EgressRefusal.self) { _ = try await client.execute(request, timeout: .seconds(120)) }
        #expect(ContinuousClock.now - started < .seconds(60), "refused at once, not retried until the deadline")
        #expect(standIn.messages.isEmpty)
        // The same request through the exempt client (an origin named by --allow-private-endpoint) arrives.
        let exempt = SharedHTTPClients.egressClient(trusting: directory.file("ca.pem"), checkingPeers: false)
        let answer = try await exempt.execute(request, timeout: .seconds(20))
        #expect(answer.status.code == 400 || answer.status.code == 403, "it reached the stand-in, which refuses an unsigned message")
        #expect(standIn.messages.count == 1)
        await standIn.stop()
    }

    /// A name that resolves to loopback (`127.1` is read by the resolver as 127.0.0.1) is
    /// refused before any connection is made.
    @Test func aNameThatResolvesToAPrivateAddressIsRefusedBeforeConnecting() async throws {
        let client = EgressHTTPClient(policy: .standard, trusting: "")
        var request = HTTPClientRequest(url: "https://127.1:9/push/x")
        request.method = .POST
        do {
            // Generous: a loaded machine runs the lookup late; the refusal is what is checked.
            _ = try await client.execute(request, timeout: .seconds(30))
            Issue.record("sent")
        } catch let refusal as EgressRefusal {
            #expect(refusal.code == .privateAddress, "\(refusal)")
            #expect(refusal.detail.contains("127.0.0.1"))
        }
    }
}
