import Foundation

/// Debian's `faketime`: runs a daemon on a skewed clock (tests and the chaos soak).
///
/// Only the wall clock is skewed (`FAKETIME_DONT_FAKE_MONOTONIC`): with the monotonic clock
/// skewed too, NIO's timers were armed a minute late and the daemon's sleeps lasted a minute.
/// libfaketime still shifts the timers NIO arms, so they fire early and NIO arms them again:
/// the daemon works, at about one core of CPU. `faketime` forks the daemon, so `DaemonProcess`
/// runs it in a process group of its own (a SIGKILL reaches both). Preloading libfaketime
/// straight into a process that swift-subprocess spawned lost the daemon's arguments.
public enum FakeTime {
    /// A `DaemonProcess` launcher; `offset` as faketime's `-f` takes it, e.g. `+60s`. Run it with
    /// `environment` merged into the daemon's.
    public static func launcher(offset: String) -> [String] { ["/usr/bin/faketime", "-f", offset] }
    public static let environment = ["FAKETIME_DONT_FAKE_MONOTONIC": "1"]
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/faketime") }
}
