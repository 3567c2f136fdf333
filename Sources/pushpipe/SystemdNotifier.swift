import PushPipeCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tells systemd what the daemon is doing (`Type=notify`, sd_notify(3)), so `systemctl start`
/// returns once the daemon serves and a unit ordered after it starts then, not at `exec`:
/// ready once every listener listens and every pipeline started, reloading during a SIGHUP,
/// stopping when a drain begins. Without `NOTIFY_SOCKET` (not started by systemd) it says
/// nothing. A message that cannot be sent is dropped: readiness is a courtesy to the service
/// manager, never a reason to stop.
final class SystemdNotifier: Sendable {
    /// The socket's path; `@` starts a name in the abstract namespace.
    let socket: String?
    private enum Phase: Int { case starting, ready, stopping }
    private let phase = Atomic<Int>(Phase.starting.rawValue)

    init(environment: [String: String]) {
        socket = environment["NOTIFY_SOCKET"].flatMap { $0.hasPrefix("/") || $0.hasPrefix("@") ? $0 : nil }
    }

    /// The first time, and again after a reload; never once stopping.
    func ready(status: String) {
        let (exchanged, original) = phase.compareExchange(expected: Phase.starting.rawValue, desired: Phase.ready.rawValue, ordering: .relaxed)
        guard exchanged || original == Phase.ready.rawValue else { return }
        send("READY=1\nSTATUS=\(status)")
    }

    /// Before a reload, with the monotonic time systemd's `Type=notify-reload` asks for; `ready`
    /// follows it whatever the reload's result, since the daemon goes on serving either way.
    /// Only while ready: a SIGHUP during the start or the drain reloads without telling.
    func reloading() {
        guard phase.load(ordering: .relaxed) == Phase.ready.rawValue else { return }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        send("RELOADING=1\nMONOTONIC_USEC=\(Int(now.tv_sec) * 1_000_000 + Int(now.tv_nsec) / 1_000)")
    }

    func stopping() {
        phase.store(Phase.stopping.rawValue, ordering: .relaxed)
        send("STOPPING=1")
    }

    private func send(_ message: String) {
        guard let socket else { return }
        #if os(Linux)
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let descriptor = Darwin.socket(AF_UNIX, SOCK_DGRAM, 0)
        #endif
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(message.utf8)
        _ = UnixSocketAddress.with(socket) { address, length in
            bytes.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, 0, address, length) }
        }
    }
}
