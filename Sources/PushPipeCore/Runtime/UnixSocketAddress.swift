#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A Unix socket's address as `NOTIFY_SOCKET` names it: a path, or `@name` in Linux's abstract
/// namespace. Written once for the daemon's sd_notify and the tests' stand-in for systemd,
/// because the two lengths differ (an abstract name has no terminating NUL) and must agree.
package enum UnixSocketAddress {
    /// Calls `body` with the address and its length; nil (and no call) when the name does not fit.
    package static func with<T>(_ name: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (bytes.first == 0 ? 0 : 1)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(length)) }
        }
    }
}
