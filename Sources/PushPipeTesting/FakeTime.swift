import Foundation

/// Debian's `faketime`: runs a daemon on a skewed clock (tests and the chaos soak).
///
/// Only the wall clock is skewed (`FAKETIME_DONT_FAKE_MONOTONIC`): with the monotonic clock
/// skewed too, NIO arms its timers at deadlines the kernel reads a minute late, and every
/// sleep lasts a minute longer. libfaketime still shifts the timers NIO arms, so they fire
/// early and NIO arms them again: the daemon works, at about one core of CPU. `faketime`
/// forks the daemon, so `DaemonProcess` runs it in a process group of its own (a SIGKILL
/// reaches both). libfaketime is not preloaded straight into the process swift-subprocess
/// spawns: that process loses its arguments.
public enum FakeTime {
    /// A `DaemonProcess` launcher; `offset` as faketime's `-f` takes it, e.g. `+60s`.
    public static func launcher(offset: String) -> [String] {
        ["/usr/bin/env", "FAKETIME_DONT_FAKE_MONOTONIC=1", "/usr/bin/faketime", "-f", offset]
    }
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/faketime") }
}
