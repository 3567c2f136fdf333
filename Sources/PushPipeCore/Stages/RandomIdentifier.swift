import Synchronization

/// Identifiers for events and requests (`apns-id`): unique and unpredictable enough to
/// correlate logs, not secrets. `UUID()` on Linux opens `/dev/urandom` on every call and the
/// system generator is a `getrandom` call per number: four system calls per notification.
/// Instead SplitMix64 over one atomic counter, seeded once from the system generator.
public enum RandomIdentifier {
    private static let hexDigits = Array("0123456789abcdef".utf8)
    private static let state = Atomic<UInt64>({ var system = SystemRandomNumberGenerator(); return system.next() }())

    struct Generator: RandomNumberGenerator {
        mutating func next() -> UInt64 {
            let gamma: UInt64 = 0x9E37_79B9_7F4A_7C15
            var value = RandomIdentifier.state.wrappingAdd(gamma, ordering: .relaxed).newValue
            value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
            value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
            return value ^ (value >> 31)
        }
    }

    /// A version 4 UUID in lower case (`apns-id`, stdout's provider ids).
    public static func uuid() -> String {
        var generator = Generator()
        var high = generator.next() as UInt64
        var low = generator.next() as UInt64
        high = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000 // version 4
        low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000 // RFC 4122 variant
        var bytes: [UInt8] = []
        bytes.reserveCapacity(36)
        appendHex(high, nibbles: 16, to: &bytes)
        appendHex(low, nibbles: 16, to: &bytes)
        for dash in [8, 13, 18, 23] { bytes.insert(UInt8(ascii: "-"), at: dash) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `nibbles` lower-case hex digits (at most 24).
    public static func hex(nibbles: Int) -> String {
        precondition((1...24).contains(nibbles))
        var generator = Generator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(nibbles)
        appendHex(generator.next() as UInt64, nibbles: min(16, nibbles), to: &bytes)
        if nibbles > 16 { appendHex(generator.next() as UInt64, nibbles: nibbles - 16, to: &bytes) }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func appendHex(_ value: UInt64, nibbles: Int, to bytes: inout [UInt8]) {
        for index in (0..<nibbles).reversed() { bytes.append(hexDigits[Int((value >> (4 * UInt64(index))) & 0xF)]) }
    }
}
