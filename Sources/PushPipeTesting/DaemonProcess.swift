import Foundation
import Subprocess

#if canImport(System)
import System
#else
import SystemPackage
#endif

/// The real `pushpipe` binary as a child process, for tests that need real signals, real
/// crashes and a real listening socket. Output lines are collected so tests wait for what
/// the daemon says instead of sleeping. The process lives exactly as long as `run`'s body
/// (it is killed if still running), and it is spawned and reaped by swift-subprocess like
/// every other child of the test process.
public final class DaemonProcess: Sendable {
    struct State {
        var stdout: [String] = []
        var stderr: [String] = []
        var pid: pid_t?
        var exitStatus: Int32?
        /// Started through a launcher (in a process group of its own): the daemon is its child.
        var launched = false
        /// The daemon leads a process group of its own (`ownProcessGroup`), as in a terminal.
        var groupLeader = false
    }

    private let state = ObservedState(State())

    /// The `pushpipe` binary next to the test bundle (or `$PUSHPIPE_BINARY`).
    public static var binary: String {
        if let path = ProcessInfo.processInfo.environment["PUSHPIPE_BINARY"] { return path }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        #if os(Linux)
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
        }
        #endif
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("pushpipe").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return "pushpipe"
    }

    /// Starts the daemon, runs `body` with it, and makes sure it is gone afterwards.
    /// - Parameters:
    ///   - launcher: a command that runs the daemon, e.g. `["/usr/bin/faketime", "-f", "+60s"]`
    ///     for a daemon on a skewed clock (its last argument is followed by the binary's path).
    ///   - ownProcessGroup: the daemon leads a process group of its own, as a shell's foreground
    ///     job does, so `signalProcessGroup` can do what a terminal's Ctrl-C does without
    ///     reaching the test runner.
    public static func run<T: Sendable>(
        arguments: [String],
        directory: String,
        environment: [String: String] = [:],
        launcher: [String] = [],
        ownProcessGroup: Bool = false,
        _ body: @Sendable (DaemonProcess) async throws -> T
    ) async throws -> T {
        let daemon = DaemonProcess()
        // Many daemons run at once in tests: each gets its own admin port unless the test chose one.
        let arguments = arguments.first == "run" && !arguments.contains("--admin-listen") ? arguments + ["--admin-listen", "127.0.0.1:0"] : arguments
        var overrides: [Environment.Key: String?] = ["PUSHPIPE_LOG_LEVEL": ProcessInfo.processInfo.environment["PUSHPIPE_LOG_LEVEL"] ?? "debug"]
        for (key, value) in environment { overrides[Environment.Key(stringLiteral: key)] = value }
        let processEnvironment = Environment.inherit.updating(overrides)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                let (executable, all) = launcher.isEmpty ? (binary, arguments) : (launcher[0], launcher.dropFirst() + [binary] + arguments)
                var options = PlatformOptions()
                if !launcher.isEmpty || ownProcessGroup { options.processGroupID = 0 }
                let result = try await Subprocess.run(
                    .path(FilePath(executable)),
                    arguments: Arguments(Array(all)),
                    environment: processEnvironment,
                    workingDirectory: FilePath(directory),
                    platformOptions: options,
                    input: .none,
                    output: .sequence,
                    error: .sequence
                ) { execution in
                    daemon.changed {
                        $0.pid = execution.processIdentifier.value
                        $0.launched = !launcher.isEmpty
                        $0.groupLeader = launcher.isEmpty && ownProcessGroup
                    }
                    try await withThrowingTaskGroup(of: Void.self) { streams in
                        streams.addTask { for try await line in execution.standardOutput.strings() { daemon.append(line, error: false) } }
                        streams.addTask { for try await line in execution.standardError.strings() { daemon.append(line, error: true) } }
                        try await streams.waitForAll()
                    }
                }
                let status: Int32 =
                    switch result.terminationStatus {
                    case .exited(let code): code
                    case .signaled(let signal): 128 + signal
                    }
                daemon.changed { $0.exitStatus = status }
                return nil
            }
            defer { group.cancelAll() }
            do {
                let value = try await body(daemon)
                daemon.signal(SIGKILL)
                return value
            } catch {
                daemon.signal(SIGKILL)
                throw error
            }
        }
    }

    private func append(_ line: String, error: Bool) {
        changed { if error { $0.stderr.append(line) } else { $0.stdout.append(line) } }
    }

    private func changed(_ change: (inout State) -> Void) {
        state.update(change)
    }

    public var standardOutput: [String] { state.value.stdout }
    public var standardError: [String] { state.value.stderr }

    /// Waits until a line of output (stdout or stderr) contains `text`; returns that line.
    @discardableResult
    public func waitForLine(containing text: String, after skip: Int = 0, timeout: Double = 30) async throws -> String {
        try await waitFor("'\(text)'", timeout: timeout) { state in
            (state.stderr + state.stdout).filter { $0.contains(text) }.dropFirst(skip).first
        }
    }

    /// The port from the daemon's `listening on http://host:port` line.
    public func port() async throws -> Int {
        let line = try await waitForLine(containing: "listening on http://")
        guard let range = line.range(of: #"listening on http://(\[[^\]]*\]|[^:]+):(\d+)"#, options: .regularExpression),
            let port = Int(line[range].split(separator: ":").last ?? "")
        else { throw DaemonProcessError.noPort(line) }
        return port
    }

    /// The port of the admin listener, from the daemon's `admin on http://host:port` line.
    public func adminPort() async throws -> Int {
        let line = try await waitForLine(containing: "admin on http://")
        guard let range = line.range(of: #"admin on http://(\[[^\]]*\]|[^:]+):(\d+)"#, options: .regularExpression),
            let port = Int(line[range].split(separator: ":").last ?? "")
        else { throw DaemonProcessError.noPort(line) }
        return port
    }

    /// Sends a signal to the running process; nothing before it started (await `port()`) or after it exited.
    /// Through a launcher (faketime forks the daemon), SIGKILL goes to the whole process group,
    /// so the daemon dies with it, and other signals to the daemon itself: it drains or reloads,
    /// and the launcher exits with it.
    public func signal(_ number: Int32) {
        let current = state.value
        guard current.exitStatus == nil, let pid = current.pid else { return }
        guard current.launched else {
            kill(pid, number)
            return
        }
        if number == SIGKILL {
            kill(-pid, number)
        } else {
            let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
            kill(children.split(separator: " ").first.flatMap { pid_t($0) } ?? pid, number)
        }
    }

    /// The daemon's pid once it started (what another daemon's lock error names).
    public var processIdentifier: pid_t? { state.value.pid }

    /// Sends a signal to every process of the daemon's group, as a terminal sends Ctrl-C
    /// (SIGINT) to its foreground job: only for a daemon started with `ownProcessGroup`.
    public func signalProcessGroup(_ number: Int32) {
        let current = state.value
        guard current.exitStatus == nil, current.groupLeader, let pid = current.pid else { return }
        kill(-pid, number)
    }

    /// The daemon's child processes (its plugins), from /proc: empty elsewhere.
    public var childProcesses: [pid_t] {
        guard let pid = state.value.pid, let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return [] }
        return tasks.flatMap { task in
            ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? "").split(separator: " ").compactMap {
                pid_t($0)
            }
        }
    }

    /// Waits for the process to exit and returns its status (128 + signal when killed).
    public func waitForExit(timeout: Double = 30) async throws -> Int32 {
        try await waitFor("exit", timeout: timeout, exitIsFailure: false) { $0.exitStatus }
    }

    private func waitFor<T>(_ what: String, timeout: Double, exitIsFailure: Bool = true, _ check: @escaping (State) -> T?) async throws -> T {
        try await state.wait(
            timeout: timeout,
            { snapshot in
                if let value = check(snapshot) { return value }
                if exitIsFailure, let status = snapshot.exitStatus {
                    throw DaemonProcessError.exited(status: status, output: (snapshot.stderr + snapshot.stdout).suffix(30).joined(separator: "\n"))
                }
                return nil
            },
            failure: { snapshot in
                DaemonProcessError.timedOut(waitingFor: what, output: (snapshot.stderr + snapshot.stdout).suffix(30).joined(separator: "\n"))
            }
        )
    }
}

public enum DaemonProcessError: Error, CustomStringConvertible {
    case exited(status: Int32, output: String)
    case timedOut(waitingFor: String, output: String)
    case noPort(String)

    public var description: String {
        switch self {
        case .exited(let status, let output): "daemon exited with \(status):\n\(output)"
        case .timedOut(let text, let output): "timed out waiting for \(text):\n\(output)"
        case .noPort(let line): "no port in '\(line)'"
        }
    }
}
