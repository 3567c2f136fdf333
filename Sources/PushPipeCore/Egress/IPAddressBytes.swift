import Foundation

/// An IPv4 or IPv6 address as its bytes, parsed strictly (`inet_pton`: `127.1` or `0x7f.1` are
/// names, not addresses), and whether a request to a URL a user chose may reach it.
public struct IPAddressBytes: Sendable, Hashable, CustomStringConvertible {
    /// 4 bytes for IPv4, 16 for IPv6.
    public let bytes: [UInt8]

    public init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        // A zone (`fe80::1%eth0`) names a link: never public.
        let unzoned = text.split(separator: "%", maxSplits: 1).first.map(String.init) ?? text
        guard inet_pton(AF_INET6, unzoned, &v6) == 1 else { return nil }
        bytes = withUnsafeBytes(of: &v6) { Array($0) }
    }

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    public var description: String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":")
    }

    /// Public unicast only: not loopback, private (RFC 1918), shared (RFC 6598), link-local,
    /// unique-local, multicast, documentation, benchmarking or otherwise reserved; an IPv6
    /// address carrying an IPv4 one (mapped, NAT64, 6to4) is judged by the IPv4 one.
    public var isPublic: Bool {
        if bytes.count == 4 { return Self.isPublicV4(bytes[0], bytes[1], bytes[2], bytes[3]) }
        let b = bytes
        let zeroPrefix = b[0..<10].allSatisfy { $0 == 0 }
        if zeroPrefix, b[10] == 0xFF, b[11] == 0xFF { return Self.isPublicV4(b[12], b[13], b[14], b[15]) }  // ::ffff:a.b.c.d
        if zeroPrefix, b[10] == 0, b[11] == 0 { return false }  // ::, ::1, deprecated IPv4-compatible
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xFF, b[3] == 0x9B { return Self.isPublicV4(b[12], b[13], b[14], b[15]) }  // 64:ff9b::/96
        if b[0] == 0x20, b[1] == 0x02 { return Self.isPublicV4(b[2], b[3], b[4], b[5]) }  // 2002::/16 6to4
        if b[0] & 0xFE == 0xFC { return false }  // fc00::/7 unique local
        if b[0] == 0xFE, b[1] & 0xC0 == 0x80 { return false }  // fe80::/10 link-local
        if b[0] == 0xFE, b[1] & 0xC0 == 0xC0 { return false }  // fec0::/10 site-local (deprecated)
        if b[0] == 0xFF { return false }  // multicast
        if b[0] == 0x20, b[1] == 0x01, b[2] == 0x0D, b[3] == 0xB8 { return false }  // 2001:db8::/32 documentation
        if b[0] == 0x20, b[1] == 0x01, b[2] == 0x00, b[3] == 0x00 { return false }  // 2001::/32 Teredo
        if b[0] == 0x01, b[1] == 0x00, b[2...7].allSatisfy({ $0 == 0 }) { return false }  // 100::/64 discard
        return b[0] & 0xE0 == 0x20  // 2000::/3, the global unicast space
    }

    static func isPublicV4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Bool {
        switch (a, b) {
        case (0, _), (10, _), (127, _): return false  // this network, private, loopback
        case (100, 64...127): return false  // shared address space (carrier-grade NAT)
        case (169, 254): return false  // link-local, cloud metadata services
        case (172, 16...31), (192, 168): return false  // private
        case (192, 0) where c == 0 || c == 2: return false  // IETF protocol assignments, TEST-NET-1
        case (192, 88) where c == 99: return false  // 6to4 relay anycast
        case (198, 18...19): return false  // benchmarking
        case (198, 51) where c == 100, (203, 0) where c == 113: return false  // TEST-NET-2, -3
        case (224...255, _): return false  // multicast, reserved, broadcast
        default: return true
        }
    }
}
