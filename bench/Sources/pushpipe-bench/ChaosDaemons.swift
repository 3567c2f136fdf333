import Foundation
import PushPipeTesting
import Synchronization

/// The chaos soak's daemons: each slot runs one daemon process at a time and starts the next
/// when it was killed or stopped, until the soak ends. Faults reach a slot as commands.
final class ChaosDaemons: Sendable {
    enum Command: Sendable, Equatable { case kill, terminate, reload, stop }

    private struct Slot {
        var instance = -1
        var commands: AsyncStream<Command>.Continuation?
    }

    private let slots: Mutex<[Slot]>
    private let ports = ObservedState([Int: Int]())
    private let running = ObservedState(0)
    private let stopping = Atomic<Bool>(false)
    private let ledger: ChaosLedger

    init(count: Int, ledger: ChaosLedger) {
        slots = Mutex(Array(repeating: Slot(), count: count))
        self.ledger = ledger
    }

    func instance(of slot: Int) -> Int { slots.withLock { $0[slot].instance } }

    func port(of slot: Int) async throws -> Int {
        try await ports.wait(timeout: 120, { $0[slot] }, failure: { _ in WaitTimedOut("daemon \(slot) did not start") })
    }

    /// The port of a slot's daemon while it is up.
    func currentPort(of slot: Int) -> Int? { ports.value[slot] }

    /// A daemon that is up, at random; nil while none is.
    /// - Parameter slots: only these slots (nil: any).
    func anyPort(_ random: SeededRandom, among slots: Range<Int>? = nil) -> Int? {
        let up = ports.value.filter { slots?.contains($0.key) ?? true }.sorted { $0.key < $1.key }.map(\.value)
        return up.isEmpty ? nil : up[random.next(up.count)]
    }

    func command(_ command: Command, slot: Int) async {
        _ = slots.withLock { $0[slot].commands }?.yield(command)
    }

    /// Stops every daemon with SIGTERM (each drains) and returns once all have exited.
    func stopAll() async {
        stopping.store(true, ordering: .relaxed)
        for slot in slots.withLock({ $0.indices }) { await command(.stop, slot: slot) }
        _ = try? await running.wait(timeout: 180, { $0 == 0 ? () : nil }, failure: { WaitTimedOut("\($0) daemons still running") })
    }

    func keepRunning(slot: Int, arguments: [String], directory: String, environment: [String: String], launcher: [String]) async throws {
        running.update { $0 += 1 }
        defer { running.update { $0 -= 1 } }
        while !stopping.load(ordering: .relaxed) {
            let instance = ledger.nextInstance(slot: slot)
            let (commands, continuation) = AsyncStream<Command>.makeStream()
            slots.withLock { $0[slot] = Slot(instance: instance, commands: continuation) }
            // Pipelines may name the process (the Web Push subject), so a send says who made it.
            let environment = environment.merging(["CHAOS_INSTANCE": String(instance)]) { _, new in new }
            do {
                let stopped = try await DaemonProcess.run(
                    arguments: arguments,
                    directory: directory,
                    environment: environment,
                    launcher: launcher
                ) { daemon in
                    try await self.serve(daemon, slot: slot, instance: instance, commands: commands)
                }
                if stopped { return }
            } catch {
                // It could not start (the database is away): try again.
                ports.update { $0[slot] = nil }
                FileHandle.standardError.write(Data("chaos: daemon \(slot) did not start: \(error)\n".utf8))
                try await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Runs the commands on one daemon process; returns whether the soak asked it to stop for good.
    private func serve(_ daemon: DaemonProcess, slot: Int, instance: Int, commands: AsyncStream<Command>) async throws -> Bool {
        defer { ledger.keepLog(of: instance, daemon.standardError + daemon.standardOutput) }
        let port = try await daemon.port()
        ports.update { $0[slot] = port }
        for await command in commands {
            switch command {
            case .reload:
                daemon.signal(SIGHUP)
            case .kill:
                ports.update { $0[slot] = nil }
                ledger.killed(instance)
                daemon.signal(SIGKILL)
                _ = try? await daemon.waitForExit()
                return false
            case .terminate, .stop:
                ports.update { $0[slot] = nil }
                let signalled = ContinuousClock.now
                // The soak's own stop at the end explains nothing: only a SIGTERM that is a fault.
                if command == .terminate { ledger.terminated(instance) }
                daemon.signal(SIGTERM)
                let status = try? await daemon.waitForExit(timeout: 120)
                if command == .terminate { ledger.exited(instance) }
                let took = ContinuousClock.now - signalled
                ledger.stopped(after: Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)
                if status != 0 {
                    // What it said about stopping, reloading and its store, and its last lines.
                    let keywords = ["stop", "reload", "drain", "store", "signal", "pipeline started", "warning", "error", "notice"]
                    let told = daemon.standardError.filter { line in keywords.contains { line.contains($0) } && !line.contains("psql_error") }
                    // And what its OGS pipeline did last (the one seen not to stop), but the routine lines.
                    let routine = ["claimed 1 due checks", "nothing newer than", "run ping pong"]
                    let ogs = daemon.standardError.filter { $0.contains("ogs-turns") && !routine.contains(where: $0.contains) }
                    let lines = told.suffix(60) + ["… ogs-turns:"] + ogs.suffix(30) + ["… last:"] + daemon.standardError.suffix(10)
                    FileHandle.standardError.write(
                        Data(
                            "chaos: daemon \(slot) exited with \(status.map(String.init) ?? "nothing") after SIGTERM:\n\(lines.joined(separator: "\n"))\n"
                                .utf8
                        )
                    )
                }
                return command == .stop
            }
        }
        return true
    }
}
