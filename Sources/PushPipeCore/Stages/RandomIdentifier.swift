import Foundation
import Synchronization

/// Identifiers for events and requests (`apns-id`): unique and unpredictable enough to
/// correlate logs, not secrets. `UUID()` on Linux opens `/dev/urandom` on every call and the
/// system generator is a `getrandom` call per number: several system calls per notification.
/// Instead SplitMix64 over one atomic counter, seeded once from the system generator.
public enum RandomIdentifier {
    private static let hexDigits = Array("0123456789abcdef".utf8)
    private static let state = Atomic<UInt64>(
        {
            var system = SystemRandomNumberGenerator()
            return system.next()
        }()
    )

    struct Generator: RandomNumberGenerator {
        mutating func nextHex(nibbles: Int) -> String {
            var bytes: [UInt8] = []
            RandomIdentifier.appendHex(next() as UInt64, nibbles: nibbles, to: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }

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
        high = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000  // version 4
        low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  // RFC 4122 variant
        var bytes: [UInt8] = []
        bytes.reserveCapacity(36)
        appendHex(high, nibbles: 16, to: &bytes)
        appendHex(low, nibbles: 16, to: &bytes)
        for dash in [8, 13, 18, 23] { bytes.insert(UInt8(ascii: "-"), at: dash) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// This process's part of `objectID`, and its counter, which starts anywhere.
    private static let process = {
        var generator = Generator()
        return generator.nextHex(nibbles: 10)
    }()
    private static let counter = Atomic<UInt32>(
        {
            var generator = Generator()
            return UInt32(truncatingIfNeeded: generator.next() as UInt64)
        }()
    )

    /// 24 lower-case hex digits laid out as a MongoDB ObjectId: the UNIX seconds, a part for
    /// this process, then a counter. Unique, and increasing within a process: rows keyed by
    /// them are inserted at the end of their index, not all over it (a random key dirtied a
    /// page of the index per event, and each commit wrote every dirty page again).
    public static func objectID(now: Double = Date().timeIntervalSince1970) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        appendHex(UInt64(max(0, now)) & 0xFFFF_FFFF, nibbles: 8, to: &bytes)
        bytes.append(contentsOf: process.utf8)
        appendHex(UInt64(counter.wrappingAdd(1, ordering: .relaxed).newValue & 0xFF_FFFF), nibbles: 6, to: &bytes)
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

    fileprivate static func appendHex(_ value: UInt64, nibbles: Int, to bytes: inout [UInt8]) {
        for index in (0..<nibbles).reversed() { bytes.append(hexDigits[Int((value >> (4 * UInt64(index))) & 0xF)]) }
    }
}
