import PushPipeCore
import Testing

/// The one policy for URLs users chose. Addresses are judged as addresses (an IPv6
/// form of 10.0.0.5 is 10.0.0.5), URLs before anything is resolved.
@Suite struct EgressPolicyTests {
    @Test(arguments: [
        "127.0.0.1", "127.255.0.9", "10.0.0.5", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
        "0.0.0.0", "224.0.0.1", "239.255.255.250", "255.255.255.255", "240.0.0.1", "192.0.0.8", "198.18.0.1",
        "::", "::1", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.5",
        "64:ff9b::a00:5", "2002:a00:5::1", "2001:db8::1", "::127.0.0.1",
    ])
    func aNonPublicAddressIsRefused(_ text: String) throws {
        let address = try #require(IPAddressBytes(text), "\(text) parses")
        #expect(!address.isPublic, "\(text)")
        #expect(!EgressPolicy.standard.permits(address, origin: "https://push.example.net"))
    }

    @Test(arguments: [
        "8.8.8.8", "1.1.1.1", "142.250.74.10", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "2a00:1450:4001::200e",
        "::ffff:8.8.8.8",
    ])
    func aPublicAddressIsAllowed(_ text: String) throws {
        #expect(try #require(IPAddressBytes(text)).isPublic, "\(text)")
    }

    @Test func namesThatLookLikeAddressesAreNotAddresses() {
        for text in ["127.1", "0x7f.0.0.1", "017700000001", "127.0.0.1.attacker.example", "localhost", ""] {
            #expect(IPAddressBytes(text) == nil, "\(text)")
        }
    }

    @Test(arguments: [
        "http://push.example.net/x", "ftp://push.example.net/x", "https://localhost/x", "https://LOCALHOST:8443/x",
        "https://a.localhost/x", "https://127.0.0.1/x", "https://10.0.0.5:8443/x", "https://169.254.169.254/latest/meta-data",
        "https://[::1]:8443/x", "https://[fe80::1]/x", "https://[::ffff:192.168.0.1]/x", "https://user:pw@push.example.net/x",
        "not a url", "https:///x",
    ])
    func aURLIntoTheOperatorsNetworkIsRefusedBeforeAnythingIsResolved(_ url: String) {
        #expect(throws: EgressRefusal.self, "\(url)") { _ = try EgressPolicy.standard.check(url: url) }
    }

    @Test func aPublicHTTPSOriginIsAllowedAndNamed() throws {
        #expect(try EgressPolicy.standard.check(url: "https://fcm.googleapis.com/fcm/send/abc") == "https://fcm.googleapis.com")
        #expect(try EgressPolicy.standard.check(url: "https://Push.Example.net:443/x") == "https://push.example.net")
        #expect(try EgressPolicy.standard.check(url: "https://push.example.net:8443/x") == "https://push.example.net:8443")
    }

    @Test func namedPrivateOriginsAreAllowedAndNoOthers() throws {
        let policy = EgressPolicy(privateOrigins: ["https://localhost:8463", "https://127.0.0.1:9443"])
        #expect(try policy.check(url: "https://localhost:8463/push/1") == "https://localhost:8463")
        #expect(try policy.check(url: "https://127.0.0.1:9443/push/1") == "https://127.0.0.1:9443")
        #expect(throws: EgressRefusal.self) { _ = try policy.check(url: "https://localhost:8464/push/1") }
        #expect(throws: EgressRefusal.self) { _ = try policy.check(url: "https://127.0.0.1/push/1") }
        let loopback = try #require(IPAddressBytes("127.0.0.1"))
        #expect(policy.permits(loopback, origin: "https://localhost:8463"))
        #expect(!policy.permits(loopback, origin: "https://push.example.net"))
    }

    @Test func anAllowListNamesThePushServices() throws {
        let policy = EgressPolicy.standard.allowing(origins: ["https://fcm.googleapis.com", "https://*.push.apple.com"])
        #expect(try policy.check(url: "https://fcm.googleapis.com/fcm/send/x") == "https://fcm.googleapis.com")
        #expect(try policy.check(url: "https://web.push.apple.com/QO") == "https://web.push.apple.com")
        for url in [
            "https://push.apple.com/x", "https://push.apple.com.evil.example/x", "https://evilpush.apple.com/x",
            "https://fcm.googleapis.com.evil.example/x", "https://updates.push.services.mozilla.com/x",
        ] {
            #expect(throws: EgressRefusal.self, "\(url)") { _ = try policy.check(url: url) }
        }
        do {
            _ = try policy.check(url: "https://updates.push.services.mozilla.com/x")
        } catch {
            #expect(error.code == .originNotAllowed)
        }
    }
}
