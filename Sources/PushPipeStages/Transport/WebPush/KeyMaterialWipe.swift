#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// Clears key material in a buffer about to be freed, in a call the compiler keeps: a plain
/// store of zeros into memory nothing reads again may be dropped as dead.
enum KeyMaterialWipe {
    static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        #if canImport(Darwin)
        _ = memset_s(base, buffer.count, 0, buffer.count)
        #else
        explicit_bzero(base, buffer.count)
        #endif
    }

    static func wipe(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        wipe(UnsafeMutableRawBufferPointer(buffer))
    }
}
