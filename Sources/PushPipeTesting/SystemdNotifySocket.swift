import Foundation
import PushPipeCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// systemd's side of sd_notify(3) for tests: a datagram socket a daemon is told about in
/// `NOTIFY_SOCKET`, keeping every message it receives (`READY=1`, `STOPPING=1`, …) for a test
/// to wait on. A thread reads it, so a blocking receive never holds one of the few threads
/// Swift concurrency has.
public final class SystemdNotifySocket: Sendable {
    /// What `NOTIFY_SOCKET` says: the path, or `@name` in the abstract namespace.
    public let address: String
    public let messages = ObservedState<[String]>([])
    private let descriptor: Int32
    private let stopped = Atomic<Bool>(false)
    private let finished = ObservedState<Bool>(false)

    /// Binds at `path`, or at an abstract name when `path` starts with `@` (Linux).
    public init(path: String) throws {
        #if os(Linux)
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        #else
        descriptor = socket(AF_UNIX, SOCK_DGRAM, 0)
        #endif
        guard descriptor >= 0 else { throw SystemdNotifySocketError.socket(errno) }
        address = path
        let bound = UnixSocketAddress.with(path) { bind(descriptor, $0, $1) } ?? -1
        guard bound == 0 else {
            let error = errno
            closeDescriptor(descriptor)
            throw SystemdNotifySocketError.bind(error)
        }
        let thread = Thread { [self] in receive() }
        thread.start()
    }

    private func receive() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        // Wakes every 100 ms only to see whether the test is over.
        while !stopped.load(ordering: .relaxed) {
            guard poll(&poller, 1, 100) > 0 else { continue }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { continue }
            let message = String(decoding: buffer[..<count], as: UTF8.self)
            messages.update { $0.append(message) }
        }
        closeDescriptor(descriptor)
        finished.update { $0 = true }
    }

    /// Waits for a message containing `text` after the first `skip` such messages.
    @discardableResult
    public func waitForMessage(containing text: String, after skip: Int = 0, timeout: Double = 30) async throws -> String {
        try await messages.wait(timeout: timeout) {
            $0.filter { $0.contains(text) }.dropFirst(skip).first
        } failure: { received in
            SystemdNotifySocketError.noMessage(text, received: received)
        }
    }

    /// Stops reading and closes the socket.
    public func close() async {
        stopped.store(true, ordering: .relaxed)
        _ = try? await finished.wait(timeout: 5) {
            $0 ? true : nil
        } failure: { _ in
            CancellationError()
        }
        if address.hasPrefix("/") { unlink(address) }
    }
}

private func closeDescriptor(_ descriptor: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(descriptor)
    #else
    _ = Darwin.close(descriptor)
    #endif
}

public enum SystemdNotifySocketError: Error, CustomStringConvertible {
    case socket(Int32)
    case bind(Int32)
    case noMessage(String, received: [String])

    public var description: String {
        switch self {
        case .socket(let code): "socket() failed: errno \(code)"
        case .bind(let code): "bind() failed: errno \(code)"
        case .noMessage(let text, let received): "no message with '\(text)'; received \(received)"
        }
    }
}
